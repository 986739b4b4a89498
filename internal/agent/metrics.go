package agent

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics is the agent's own registry: per-GPU gauges from the latest
// sample (a value NVML did not give is absent, never 0), the job mapping
// as an info metric to join in PromQL, and the agent's health.
type metrics struct {
	reg            *prometheus.Registry
	sampleDuration prometheus.Histogram
	nvmlErrors     *prometheus.CounterVec
	samples        prometheus.Counter
	segments       prometheus.Counter
	dropped        prometheus.Counter
	shipErrors     prometheus.Counter
	shippedFiles   prometheus.Counter
	backlogFiles   *prometheus.GaugeVec
	backlogBytes   prometheus.Gauge
	lastShip       prometheus.Gauge
	// GPU events (gpuevents.go)
	xidErrors           *prometheus.CounterVec
	eccErrors           *prometheus.CounterVec
	throttleEvents      *prometheus.CounterVec
	gpuEventsSuppressed prometheus.Counter
	gpuEventsDropped    prometheus.Counter
	// profiles (profile.go)
	profileSamples  prometheus.Counter
	profileDuration prometheus.Histogram
	// socketRefused counts connections the sockets turned away
	// (connlimit.go), by socket and reason
	socketRefused *prometheus.CounterVec
}

func newMetrics(a *Agent) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		sampleDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "gpusuite_agent_sample_duration_seconds", Help: "Wall time of one sample cycle of every GPU.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		nvmlErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpusuite_agent_nvml_errors_total", Help: "NVML calls that failed, by return code.",
		}, []string{"code"}),
		samples:      prometheus.NewCounter(prometheus.CounterOpts{Name: "gpusuite_agent_samples_total", Help: "GPU samples recorded."}),
		segments:     prometheus.NewCounter(prometheus.CounterOpts{Name: "gpusuite_agent_segments_total", Help: "Raw sample segments spooled."}),
		dropped:      prometheus.NewCounter(prometheus.CounterOpts{Name: "gpusuite_agent_dropped_segments_total", Help: "Raw sample segments dropped because the spool was full."}),
		shipErrors:   prometheus.NewCounter(prometheus.CounterOpts{Name: "gpusuite_agent_ship_errors_total", Help: "Shipping passes that failed."}),
		shippedFiles: prometheus.NewCounter(prometheus.CounterOpts{Name: "gpusuite_agent_shipped_files_total", Help: "Spool files shipped durably."}),
		backlogFiles: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpusuite_agent_spool_backlog_files", Help: "Files waiting in the spool, by record type.",
		}, []string{"type"}),
		backlogBytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpusuite_agent_spool_backlog_bytes", Help: "Bytes waiting in the spool."}),
		lastShip: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpusuite_agent_last_ship_success_timestamp_seconds", Help: "When a shipping pass last completed (Unix time).",
		}),
		xidErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpusuite_gpu_xid_errors_total", Help: "Xid errors the driver reported since the agent started, by Xid.",
		}, append(gpuLabels, "code")),
		eccErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpusuite_gpu_ecc_error_events_total", Help: "ECC error events the driver reported since the agent started, single (corrected) or double (uncorrected) bit.",
		}, append(gpuLabels, "type")),
		throttleEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpusuite_gpu_throttle_events_total", Help: "Clock slowdowns that started, by reason (power, thermal, hw_slowdown).",
		}, append(gpuLabels, "reason")),
		gpuEventsSuppressed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpusuite_agent_gpu_events_suppressed_total", Help: "GPU event records not written because a GPU passed its hourly budget (counted above all the same).",
		}),
		gpuEventsDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpusuite_agent_gpu_events_dropped_total", Help: "GPU events lost because the agent's queue was full.",
		}),
	}
	m.profileSamples = prometheus.NewCounter(prometheus.CounterOpts{Name: "gpusuite_agent_profile_samples_total", Help: "GPU samples taken for short-interval profiles."})
	m.profileDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "gpusuite_agent_profile_sample_duration_seconds", Help: "Wall time of one profile sample of a job's GPUs.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25},
	})
	m.socketRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gpusuite_agent_socket_refused_total", Help: "Connections to the hook or profile socket turned away: at a connection cap (limit), a peer not allowed or unknown (peer), or a failed accept such as too many open files (accept_failed).",
	}, []string{"socket", "reason"})
	m.reg.MustRegister(m.profileSamples, m.profileDuration, m.socketRefused)
	m.reg.MustRegister(m.xidErrors, m.eccErrors, m.throttleEvents, m.gpuEventsSuppressed, m.gpuEventsDropped)
	m.reg.MustRegister(m.sampleDuration, m.nvmlErrors, m.samples, m.segments, m.dropped, m.shipErrors,
		m.shippedFiles, m.backlogFiles, m.backlogBytes, m.lastShip, &gpuCollector{a: a})
	return m
}

// Registry is the agent's metrics registry (no global default registry).
func (a *Agent) Registry() *prometheus.Registry { return a.metrics.reg }

var gpuLabels = []string{"node", "gpu", "uuid", "model"}

func gdesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, gpuLabels, nil)
}

var (
	dUp       = gdesc("gpusuite_gpu_up", "1 when the GPU answered the last sample, 0 when lost or timed out.")
	dUtil     = gdesc("gpusuite_gpu_utilization_percent", "GPU utilization over the last sample period (NVML).")
	dMemUtil  = gdesc("gpusuite_gpu_memory_utilization_percent", "Memory controller utilization (NVML).")
	dMemUsed  = gdesc("gpusuite_gpu_memory_used_bytes", "Frame buffer memory in use.")
	dMemTotal = gdesc("gpusuite_gpu_memory_total_bytes", "Frame buffer memory in total.")
	dPower    = gdesc("gpusuite_gpu_power_watts", "Power draw.")
	dEnergy   = gdesc("gpusuite_gpu_energy_joules_total", "NVML total energy counter (resets on driver reload).")
	dTemp     = gdesc("gpusuite_gpu_temperature_celsius", "GPU core temperature.")
	dClock    = gdesc("gpusuite_gpu_sm_clock_hertz", "SM clock.")
	dThrottle = gdesc("gpusuite_gpu_clock_event_reasons", "Bit mask of the current clock throttle (event) reasons, as NVML gives it.")
	dECC      = gdesc("gpusuite_gpu_ecc_uncorrected_errors_total", "Uncorrected ECC errors (aggregate counter).")
	dProcs    = gdesc("gpusuite_gpu_processes", "Compute processes on the GPU.")
	dForeign  = gdesc("gpusuite_gpu_foreign_processes", "Compute processes whose job is not allocated the GPU.")
	dAlloc    = gdesc("gpusuite_gpu_allocated", "Jobs allocated the GPU.")
	dIdle     = gdesc("gpusuite_gpu_allocated_idle", "1 when the GPU is allocated but idle (no process of the job, or utilization under the threshold).")
	dJobInfo  = prometheus.NewDesc("gpusuite_gpu_job_info", "Which job holds which GPU; join on uuid (… * on(uuid) group_left(job,user,account) gpusuite_gpu_job_info).",
		[]string{"node", "gpu", "uuid", "job", "restart", "user", "account", "partition"}, nil)
	dLastSample = prometheus.NewDesc("gpusuite_agent_last_sample_timestamp_seconds", "When the last sample cycle ran (Unix time).", nil, nil)
)

type gpuCollector struct{ a *Agent }

func (c *gpuCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dUp, dUtil, dMemUtil, dMemUsed, dMemTotal, dPower, dEnergy, dTemp, dClock,
		dThrottle, dECC, dProcs, dForeign, dAlloc, dIdle, dJobInfo, dLastSample} {
		ch <- d
	}
}

func (c *gpuCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.a.snapshot()
	if s.at.IsZero() {
		return
	}
	node := c.a.node
	ch <- prometheus.MustNewConstMetric(dLastSample, prometheus.GaugeValue, float64(s.at.UnixNano())/1e9)
	indexOf := map[string]string{}
	for i, r := range s.readings {
		idx := strconv.Itoa(r.Index)
		indexOf[r.UUID] = idx
		lv := []string{node, idx, r.UUID, r.Model}
		g := func(d *prometheus.Desc, t prometheus.ValueType, v float64) {
			ch <- prometheus.MustNewConstMetric(d, t, v, lv...)
		}
		up := 1.0
		if r.Lost || r.GPUUtil == nil && r.EnergyMJ == nil && r.MemUsedMiB == nil {
			up = 0
		}
		g(dUp, prometheus.GaugeValue, up)
		if r.GPUUtil != nil {
			g(dUtil, prometheus.GaugeValue, float64(*r.GPUUtil))
		}
		if r.MemUtil != nil {
			g(dMemUtil, prometheus.GaugeValue, float64(*r.MemUtil))
		}
		if r.MemUsedMiB != nil {
			g(dMemUsed, prometheus.GaugeValue, float64(*r.MemUsedMiB)*(1<<20))
		}
		if r.MemTotalMiB != nil {
			g(dMemTotal, prometheus.GaugeValue, float64(*r.MemTotalMiB)*(1<<20))
		}
		if r.PowerMW != nil {
			g(dPower, prometheus.GaugeValue, float64(*r.PowerMW)/1000)
		}
		if r.EnergyMJ != nil {
			g(dEnergy, prometheus.CounterValue, float64(*r.EnergyMJ)/1000)
		}
		if r.TempC != nil {
			g(dTemp, prometheus.GaugeValue, float64(*r.TempC))
		}
		if r.SMClockMHz != nil {
			g(dClock, prometheus.GaugeValue, float64(*r.SMClockMHz)*1e6)
		}
		if r.Throttle != nil {
			g(dThrottle, prometheus.GaugeValue, float64(*r.Throttle))
		}
		if r.ECCErrors != nil {
			g(dECC, prometheus.CounterValue, float64(*r.ECCErrors))
		}
		if r.ProcsOK {
			g(dProcs, prometheus.GaugeValue, float64(len(r.Procs)))
		}
		if i < len(s.samples) {
			sm := s.samples[i]
			foreign, idle := 0, 0
			for _, p := range sm.Procs {
				if p.Foreign {
					foreign++
				}
			}
			if r.ProcsOK {
				g(dForeign, prometheus.GaugeValue, float64(foreign))
			}
			for _, j := range sm.Jobs {
				if j.Idle {
					idle = 1
				}
			}
			g(dAlloc, prometheus.GaugeValue, float64(len(sm.Jobs)))
			if len(sm.Jobs) > 0 {
				g(dIdle, prometheus.GaugeValue, float64(idle))
			}
		}
	}
	for _, al := range s.allocs {
		for _, gp := range al.GPUs {
			ch <- prometheus.MustNewConstMetric(dJobInfo, prometheus.GaugeValue, 1,
				node, indexOf[gp.UUID], gp.UUID, strconv.FormatUint(al.Job, 10), strconv.Itoa(al.Restart), al.User, al.Account, al.Partition)
		}
	}
}
