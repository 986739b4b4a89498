package report

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/store"
)

// MetricStat is one chosen metric (or power_w) of a job on one GPU: its
// mean, weighted by the seconds each sample stood for inside the job's
// allocation, and its peak; or why the GPU cannot give it.
type MetricStat struct {
	Name        string   `json:"name"`
	Mean        *float64 `json:"mean,omitempty"`
	Peak        *float64 `json:"peak,omitempty"`
	Samples     int64    `json:"samples"`
	Seconds     float64  `json:"seconds"`
	Unsupported string   `json:"unsupported,omitempty"`
}

// GPUEvent is one Xid, ECC or throttling event of a GPU the job held,
// from its start to store.JobEventGrace after its end. A throttling
// interval is one event: Time its start (the job's start when it began
// before), End its end (nil: it outlasted the job or its records).
type GPUEvent struct {
	Node       string     `json:"node"`
	GPU        string     `json:"gpu"`
	UUID       string     `json:"uuid"`
	Kind       string     `json:"kind"` // xid, ecc_single, ecc_double, throttle
	Code       int64      `json:"code,omitempty"`
	Reason     string     `json:"reason,omitempty"`
	Meaning    string     `json:"meaning,omitempty"`
	Time       time.Time  `json:"time"`
	End        *time.Time `json:"end,omitempty"`
	Suppressed int64      `json:"suppressed,omitempty"`
}

// maxJobEvents bounds the events a job's page reads: a storm of Xids
// is said by its first ones and a count.
const maxJobEvents = 500

// xidMeaning is what NVIDIA's Xid catalogue says of the numbers a job's
// owner most often meets.
var xidMeaning = map[int64]string{
	13:  "graphics engine exception, most often the program's own fault such as an out-of-range access",
	31:  "GPU memory page fault, most often the program's illegal address",
	43:  "GPU stopped processing the program's work",
	48:  "double-bit ECC error",
	61:  "internal micro-controller breakpoint or warning",
	62:  "internal micro-controller halt",
	63:  "ECC page retirement or row remapping recorded",
	64:  "ECC page retirement or row remapping failed",
	74:  "NVLink error",
	79:  "GPU has fallen off the bus",
	92:  "high single-bit ECC error rate",
	94:  "contained ECC error",
	95:  "uncontained ECC error",
	119: "GSP RPC timeout",
	120: "GSP error",
}

// XidMeaning is the short meaning of Xid n, "" when not known here.
func XidMeaning(n int64) string { return xidMeaning[n] }

// loadMetrics fills each GPU's metrics and the job's GPU events.
func (d *DB) loadMetrics(ctx context.Context, det *Detail) error {
	ms, err := d.st.JobMetrics(ctx, det.Job.Row)
	if err != nil {
		return d.wrap(err)
	}
	byGPU := map[int64]*GPUStat{}
	for i := range det.GPUs {
		byGPU[det.GPUs[i].gpuID] = &det.GPUs[i]
	}
	// powerJ is each GPU's Σ power × seconds inside the allocation: its
	// energy where no counter gave one.
	powerJ := make(map[*GPUStat]float64, len(det.GPUs))
	for _, m := range ms {
		g := byGPU[m.GPUID]
		if g == nil {
			continue // a GPU the job's events do not name
		}
		st := MetricStat{Name: m.Name, Samples: m.Samples, Seconds: m.Seconds, Unsupported: m.Unsupported}
		if m.Seconds > 0 {
			mean := m.ValueS / m.Seconds
			st.Mean = &mean
			st.Peak = m.Peak
		}
		if m.Name == store.PowerMetric {
			g.PowerPeakW = st.Peak
			powerJ[g] = m.ValueS
			continue
		}
		if st.Mean == nil && st.Unsupported == "" {
			continue
		}
		g.Metrics = append(g.Metrics, st)
	}
	for i := range det.GPUs {
		sortMetrics(det.GPUs[i].Metrics)
	}
	oneEnergy(det, powerJ)
	evs, err := d.st.JobGPUEvents(ctx, det.Job.Row, maxJobEvents)
	if err != nil {
		return d.wrap(err)
	}
	det.Events = jobEvents(det, byGPU, evs)
	return nil
}

// oneEnergy gives the job and each of its GPUs one energy and one mean
// power, consistent with each other (docs/reports.md, "Energy and mean
// power"): splitEnergy's, and a mean power is energy / sampled time.
func oneEnergy(det *Detail, powerJ map[*GPUStat]float64) {
	j := &det.Job
	gs := det.GPUs
	if len(gs) == 0 {
		return
	}
	counter, power, sampled := make([]float64, len(gs)), make([]float64, len(gs)), make([]float64, len(gs))
	for i := range gs {
		if k := gs[i].EnergyKWh; k != nil {
			counter[i] = *k * 3.6e9
		}
		power[i], sampled[i] = powerJ[&gs[i]], gs[i].SampleS
	}
	var parts []int64
	j.EnergyMJ, parts = splitEnergy(j.EnergyMJ, counter, power, sampled)
	for i := range gs {
		g := &gs[i]
		g.EnergyMJ, g.EnergyKWh, g.PowerMeanW = parts[i], nil, nil
		if j.EnergyMJ > 0 {
			k := float64(parts[i]) / 3.6e9
			g.EnergyKWh = &k
			if g.SampleS > 0 {
				w := float64(parts[i]) / 1000 / g.SampleS
				g.PowerMeanW = &w
			}
		}
	}
}

// splitEnergy is a job's energy and each GPU's part of it. The job's is
// jobMJ, the ledger's sum of NVML energy-counter deltas inside its
// allocation; where that is 0, the sum of its GPUs' own counter
// differences if each has one, else Σ power × time of its GPUs (powerJ,
// joules). A GPU's part is in proportion to its own
// counter difference (counterMJ; where a GPU has none, every GPU's power
// × time decides, then its sampled seconds), in whole millijoules that
// add up to the job's exactly. The job detail and the gpus export both
// split so.
func splitEnergy(jobMJ int64, counterMJ, powerJ, sampleS []float64) (int64, []int64) {
	weights := make([]float64, len(counterMJ))
	counters := true
	for i, c := range counterMJ {
		weights[i] = c
		counters = counters && c > 0
	}
	if jobMJ <= 0 && counters {
		// No sample delta reached the ledger (samples lost or not yet
		// in), but each GPU's counter difference is known.
		for _, c := range counterMJ {
			jobMJ += int64(math.Round(c))
		}
	}
	if jobMJ <= 0 || !counters {
		var sum float64
		for i := range weights {
			weights[i] = max(0, powerJ[i])
			sum += weights[i]
		}
		if jobMJ <= 0 {
			jobMJ = int64(math.Round(sum * 1000))
		}
		if sum == 0 {
			copy(weights, sampleS)
		}
	}
	if !slices.ContainsFunc(weights, func(w float64) bool { return w > 0 }) {
		for i := range weights {
			weights[i] = 1 // nothing tells the GPUs apart: equal parts
		}
	}
	return jobMJ, apportion(jobMJ, weights)
}

// apportion splits total into parts in proportion to weights, each a
// whole number, the largest remainders taking what rounding down left,
// so that the parts add up to total exactly; with no weight, nothing is
// split (all 0).
func apportion(total int64, weights []float64) []int64 {
	out := make([]int64, len(weights))
	var sum float64
	for _, w := range weights {
		sum += w
	}
	if total <= 0 || sum <= 0 {
		return out
	}
	type rem struct {
		i    int
		frac float64
	}
	rems := make([]rem, len(weights))
	var given int64
	for i, w := range weights {
		exact := float64(total) * w / sum
		out[i] = int64(math.Floor(exact))
		given += out[i]
		rems[i] = rem{i, exact - float64(out[i])}
	}
	sort.SliceStable(rems, func(a, b int) bool { return rems[a].frac > rems[b].frac })
	for k := 0; given < total; k = (k + 1) % len(rems) {
		out[rems[k].i]++
		given++
	}
	return out
}

// sortMetrics puts a GPU's metrics in catalogue order, unknown names last.
func sortMetrics(ms []MetricStat) {
	sort.SliceStable(ms, func(i, j int) bool {
		a, b := catalogueRank(ms[i].Name), catalogueRank(ms[j].Name)
		if a != b {
			return a < b
		}
		return ms[i].Name < ms[j].Name
	})
}

// jobEvents turns stored events into the job's: throttling starts and
// ends paired into intervals per GPU and reason, within the job.
func jobEvents(det *Detail, byGPU map[int64]*GPUStat, evs []store.GPUEventRow) []GPUEvent {
	start := time.Unix(det.Job.Start, 0).UTC()
	type open struct {
		gpu    int64
		reason string
	}
	opened := map[open]int{}
	var out []GPUEvent
	for _, e := range evs {
		g := byGPU[e.GPUID]
		if g == nil {
			continue
		}
		ev := GPUEvent{Node: g.Node, GPU: gpuName(*g), UUID: g.UUID, Kind: e.Kind, Code: e.Code, Reason: e.Reason, Time: e.Time, Suppressed: e.Suppressed}
		switch e.Kind {
		case string(record.GPUXid):
			ev.Meaning = XidMeaning(e.Code)
		case string(record.GPUThrottleStart):
			k := open{e.GPUID, e.Reason}
			if _, ok := opened[k]; ok {
				continue // still open: the same interval
			}
			ev.Kind, ev.Code = "throttle", 0
			opened[k] = len(out)
		case string(record.GPUThrottleEnd):
			k := open{e.GPUID, e.Reason}
			t := e.Time
			if i, ok := opened[k]; ok {
				out[i].End = &t
				delete(opened, k)
				continue
			}
			// It began before the job: the interval starts with it.
			ev.Kind, ev.Code, ev.Time, ev.End = "throttle", 0, start, &t
		}
		out = append(out, ev)
	}
	return out
}

// EventNotes are the job's GPU events in words, times in loc, in time
// order: Xids with their meaning and what became of the job, ECC
// errors, and throttling as intervals.
func (det *Detail) EventNotes(loc *time.Location) []string {
	j := &det.Job
	day := time.Unix(j.Start, 0).In(loc).Format(time.DateOnly)
	at := func(t time.Time) string {
		t = t.In(loc)
		if t.Format(time.DateOnly) == day {
			return t.Format("15:04:05")
		}
		return t.Format("2006-01-02 15:04:05")
	}
	var out []string
	for _, e := range det.Events {
		who := fmt.Sprintf("GPU %s on %s", e.GPU, e.Node)
		var s string
		switch e.Kind {
		case string(record.GPUXid):
			what := "Xid " + strconv.FormatInt(e.Code, 10)
			if e.Meaning != "" {
				what += " (" + e.Meaning + ")"
			}
			s = fmt.Sprintf("%s: %s at %s", who, what, at(e.Time)) + afterXid(j, e.Time)
		case string(record.GPUECCSingle):
			s = fmt.Sprintf("%s: corrected (single-bit) ECC error at %s", who, at(e.Time))
		case string(record.GPUECCDouble):
			s = fmt.Sprintf("%s: uncorrected (double-bit) ECC error at %s", who, at(e.Time))
		case "throttle":
			end := "the end of the job"
			if e.End != nil {
				end = at(*e.End)
			}
			s = fmt.Sprintf("%s: %s throttling %s–%s", who, throttleWhat(e.Reason), at(e.Time), end)
			if e.End != nil {
				s += fmt.Sprintf(" (%s)", e.End.Sub(e.Time).Round(time.Second))
			}
		default:
			s = fmt.Sprintf("%s: %s at %s", who, e.Kind, at(e.Time))
		}
		if e.Suppressed > 0 {
			s += fmt.Sprintf("; %s before it not recorded (a storm)", plural(int(e.Suppressed), "more event", "more events"))
		}
		out = append(out, s+".")
	}
	if len(det.Events) >= maxJobEvents {
		out = append(out, fmt.Sprintf("Only the first %d GPU events are shown.", maxJobEvents))
	}
	return out
}

// afterXid says how the job ended after an Xid at t, when it ended
// within store.JobEventGrace of it.
func afterXid(j *JobRow, t time.Time) string {
	if j.End == nil {
		return ""
	}
	d := time.Unix(*j.End, 0).Sub(t).Round(time.Second)
	if d < -store.JobEventGrace*time.Second || d > store.JobEventGrace*time.Second {
		return ""
	}
	verb := "ended"
	switch j.State {
	case "failed", "node_fail", "cancelled", "timeout", "out_of_memory":
		verb = strings.ReplaceAll(j.State, "_", " ")
	}
	if d < 0 {
		return fmt.Sprintf(", %s after the job %s", -d, verb)
	}
	return fmt.Sprintf("; the job %s %s later", verb, d)
}

func throttleWhat(reason string) string {
	switch reason {
	case record.ThrottleHWSlowdown:
		return "hardware slowdown"
	}
	return reason
}
