package store

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// PowerMetric is the job_gpu_metrics name of the power draw, in watts,
// from every sample's power_mw: each job's mean and peak power per GPU.
const PowerMetric = "power_w"

// metricKey keys the batch's pending job × GPU metric figures.
type metricKey struct {
	job, gpu int64
	name     string
}

// metricAcc is a pending change to one job_gpu_metrics row: samples,
// seconds and value × seconds added (negative where a recount took a
// sample's part away), and the highest value of a sample counted.
type metricAcc struct {
	samples        int64
	seconds, value float64
	peak           float64
	hasPeak        bool
}

func (a *metricAcc) add(v, dsec float64, dn int64, counted bool) {
	a.samples += dn
	a.seconds += dsec
	a.value += v * dsec
	if counted && (!a.hasPeak || v > a.peak) {
		a.peak, a.hasPeak = v, true
	}
}

// maxIntervalMS is the longest interval a sample may stand for (ingest
// refuses more).
const maxIntervalMS = 3_600_000

// remaxKey is a job × GPU whose peaks must be read again from its
// samples: a recount took away the whole part of a sample, which may
// have been the peak.
type remaxKey struct {
	job, gpu int64
	jobID    uint64
	restart  int
}

// overlapMS is how much of w lies inside a, in ms.
func overlapMS(w window, a alloc) int64 { return max(0, min(w.hi, a.hi)-max(w.lo, a.lo)) }

// addSampleMetrics adds what one sample of GPU gpu counts for one job's
// metrics: its power and chosen metrics over the part of its window w
// inside the allocation nw, less what it counted inside old (nil: nothing
// counted yet). A sample is counted when any part of it lies inside; its
// value weighs by that part's seconds, so that a short profile sample
// weighs as little as it stands for.
func (b *Batch) addSampleMetrics(job, gpu int64, w window, old *alloc, nw alloc, powerMW *uint32, metrics map[string]float64) {
	if powerMW == nil && len(metrics) == 0 {
		return
	}
	np := overlapMS(w, nw)
	var op int64
	if old != nil {
		op = overlapMS(w, *old)
	}
	if np == op {
		return
	}
	dsec := float64(np-op) / 1000
	var dn int64
	switch {
	case np > 0 && op == 0:
		dn = 1
	case np == 0 && op > 0:
		dn = -1
	}
	counted := np > 0
	if powerMW != nil {
		b.metricAcc(metricKey{job, gpu, PowerMetric}).add(float64(*powerMW)/1000, dsec, dn, counted)
	}
	for name, v := range metrics {
		b.metricAcc(metricKey{job, gpu, name}).add(v, dsec, dn, counted)
	}
}

func (b *Batch) metricAcc(k metricKey) *metricAcc {
	a := b.metrics[k]
	if a == nil {
		a = &metricAcc{}
		if b.metrics == nil {
			b.metrics = map[metricKey]*metricAcc{}
		}
		b.metrics[k] = a
	}
	return a
}

// unsupportedNote is a chosen metric a GPU cannot give, with the reason.
type unsupportedNote struct{ name, why string }

// parseUnsupported reads a segment header's unsupported metrics ("metric:
// reason" by GPU UUID), once a segment.
func parseUnsupported(h map[string][]string) map[string][]unsupportedNote {
	if len(h) == 0 {
		return nil
	}
	out := make(map[string][]unsupportedNote, len(h))
	for uuid, notes := range h {
		for _, n := range notes {
			name, why, _ := strings.Cut(n, ":")
			if name = strings.TrimSpace(name); name != "" {
				out[uuid] = append(out[uuid], unsupportedNote{name, strings.TrimSpace(why)})
			}
		}
	}
	return out
}

// noteUnsupported records, for a job on a GPU that cannot give some chosen
// metrics, each with its reason.
func (b *Batch) noteUnsupported(job, gpu int64, notes []unsupportedNote) {
	if b.unsupported == nil {
		b.unsupported = map[metricKey]string{}
	}
	for _, n := range notes {
		b.unsupported[metricKey{job, gpu, n.name}] = n.why
	}
}

// flushMetrics writes the batch's pending job × GPU metric figures, then
// reads again the peaks a recount may have taken away.
func (b *Batch) flushMetrics() error {
	keys := make([]metricKey, 0, len(b.metrics))
	for k := range b.metrics {
		keys = append(keys, k)
	}
	sortMetricKeys(keys)
	for _, k := range keys {
		a := b.metrics[k]
		var peak any
		if a.hasPeak {
			peak = a.peak
		}
		if _, err := b.exec(`INSERT INTO job_gpu_metrics(job, gpu_id, name, samples, seconds, value_s, peak) VALUES(?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(job, gpu_id, name) DO UPDATE SET samples = job_gpu_metrics.samples + excluded.samples,
 seconds = job_gpu_metrics.seconds + excluded.seconds, value_s = job_gpu_metrics.value_s + excluded.value_s,
 peak = CASE WHEN excluded.peak IS NOT NULL AND (job_gpu_metrics.peak IS NULL OR excluded.peak > job_gpu_metrics.peak) THEN excluded.peak ELSE job_gpu_metrics.peak END`,
			k.job, k.gpu, k.name, a.samples, a.seconds, a.value, peak); err != nil {
			return err
		}
	}
	clear(b.metrics)
	keys = keys[:0]
	for k := range b.unsupported {
		keys = append(keys, k)
	}
	sortMetricKeys(keys)
	for _, k := range keys {
		if _, err := b.exec(`INSERT INTO job_gpu_metrics(job, gpu_id, name, unsupported) VALUES(?, ?, ?, ?)
ON CONFLICT(job, gpu_id, name) DO UPDATE SET unsupported = excluded.unsupported`, k.job, k.gpu, k.name, b.unsupported[k]); err != nil {
			return err
		}
	}
	clear(b.unsupported)
	rk := make([]remaxKey, 0, len(b.remax))
	for k := range b.remax {
		rk = append(rk, k)
	}
	slices.SortFunc(rk, func(a, c remaxKey) int { return cmp.Or(cmp.Compare(a.job, c.job), cmp.Compare(a.gpu, c.gpu)) })
	for _, k := range rk {
		if err := b.remaxJobGPU(k, b.remax[k]); err != nil {
			return err
		}
	}
	clear(b.remax)
	return nil
}

func sortMetricKeys(keys []metricKey) {
	slices.SortFunc(keys, func(a, c metricKey) int {
		return cmp.Or(cmp.Compare(a.job, c.job), cmp.Compare(a.gpu, c.gpu), cmp.Compare(a.name, c.name))
	})
}

// remaxJobGPU sets the peaks of a job on a GPU to the highest value of
// its stored samples with a part inside the window a (its allocation
// now). Only a recount that took a whole sample away asks: rare, and
// bounded by the job's samples on one GPU.
func (b *Batch) remaxJobGPU(k remaxKey, a alloc) error {
	if err := b.Flush(); err != nil {
		return err
	}
	// No sample stands for more than maxIntervalMS: one that starts
	// earlier ends before a.lo.
	lo := a.lo
	if lo > math.MinInt64+maxIntervalMS {
		lo -= maxIntervalMS
	}
	ss, err := b.samplesMaybeOf(k.gpu, lo, a.hi, k.jobID, k.restart)
	if err != nil {
		return err
	}
	peaks := map[string]float64{}
	for i := range ss {
		s := &ss[i]
		if overlapMS(s.window(), a) == 0 {
			continue
		}
		shares, err := s.shares()
		if err != nil {
			return err
		}
		mine := false
		for _, js := range shares {
			mine = mine || js.Job == k.jobID && js.Restart == k.restart
		}
		if !mine {
			continue
		}
		vals, err := s.metricValues()
		if err != nil {
			return err
		}
		for name, v := range vals {
			if p, ok := peaks[name]; !ok || v > p {
				peaks[name] = v
			}
		}
	}
	if _, err := b.exec(`UPDATE job_gpu_metrics SET peak = NULL WHERE job = ? AND gpu_id = ?`, k.job, k.gpu); err != nil {
		return err
	}
	names := make([]string, 0, len(peaks))
	for n := range peaks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, err := b.exec(`UPDATE job_gpu_metrics SET peak = ? WHERE job = ? AND gpu_id = ? AND name = ?`, peaks[n], k.job, k.gpu, n); err != nil {
			return err
		}
	}
	return nil
}

// metricValues is a stored sample's power (power_w) and chosen metrics.
func (s *storedSample) metricValues() (map[string]float64, error) {
	out := map[string]float64{}
	if s.metrics.Valid {
		if err := json.Unmarshal([]byte(s.metrics.String), &out); err != nil {
			return nil, fmt.Errorf("sample metrics at %d: %w", s.t, err)
		}
	}
	if s.power.Valid {
		out[PowerMetric] = float64(s.power.Int64) / 1000
	}
	return out, nil
}

// recountMetrics counts a stored sample's metrics for job again where its
// allocation moved from old to nw; a sample that loses its whole part
// has the job's peaks on the GPU read again.
func (b *Batch) recountMetrics(k remaxKey, s *storedSample, old, nw alloc) error {
	if !s.power.Valid && !s.metrics.Valid {
		return nil
	}
	w := s.window()
	if overlapMS(w, nw) == overlapMS(w, old) {
		return nil
	}
	vals, err := s.metricValues()
	if err != nil {
		return err
	}
	var power *uint32
	if s.power.Valid {
		p := uint32(s.power.Int64)
		power = &p
		delete(vals, PowerMetric)
	}
	b.addSampleMetrics(k.job, k.gpu, w, &old, nw, power, vals)
	if overlapMS(w, nw) == 0 {
		if b.remax == nil {
			b.remax = map[remaxKey]alloc{}
		}
		b.remax[k] = nw
	}
	return nil
}

// sampleMetricsJSON is a sample's metrics as stored in samples.metrics.
func sampleMetricsJSON(m map[string]float64) (string, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encode sample metrics: %w", err)
	}
	return string(data), nil
}
