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
func (d *Ledger) loadMetrics(ctx context.Context, det *Detail) error {
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
// power"): splitEnergy's energy, over the time it was drawn in.
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
	var counters bool
	j.EnergyMJ, parts, counters = splitEnergy(j.EnergyMJ, counter, power, sampled)
	for i := range gs {
		g := &gs[i]
		g.EnergyMJ, g.EnergyKWh, g.PowerMeanW = parts[i], nil, nil
		if j.EnergyMJ <= 0 {
			continue
		}
		k := float64(parts[i]) / 3.6e9
		g.EnergyKWh = &k
		// A counter difference spans the job's time on the GPU's node;
		// power × time the seconds sampled.
		span := g.SampleS
		if counters {
			span = float64(nodeElapsed(det, g.Node))
		}
		if span > 0 {
			w := float64(parts[i]) / 1000 / span
			g.PowerMeanW = &w
		}
	}
}

// nodeElapsed is the job's time on node in seconds (to now while it
// runs there): its part's start and end, else the job's.
func nodeElapsed(det *Detail, node string) int64 {
	j := &det.Job
	for _, p := range det.Nodes {
		if p.Node != node || p.Start == nil {
			continue
		}
		end := det.Now.Unix()
		if p.End != nil {
			end = *p.End
		} else if j.End != nil {
			end = *j.End
		}
		return max(0, end-*p.Start)
	}
	return j.Elapsed(det.Now)
}

// JobPowerMeanW is the job's mean power per GPU: its energy over the
// time its GPUs drew it in (each GPU's energy / its mean power), so that
// it × that time is the job's energy; nil without one.
func JobPowerMeanW(det *Detail) *float64 {
	var mj, s float64
	for _, g := range det.GPUs {
		if g.PowerMeanW != nil && *g.PowerMeanW > 0 {
			mj += float64(g.EnergyMJ)
			s += float64(g.EnergyMJ) / 1000 / *g.PowerMeanW
		}
	}
	if s <= 0 {
		return nil
	}
	w := mj / 1000 / s
	return &w
}

// splitEnergy is a job's energy and each GPU's part of it, in whole
// millijoules that add up to the job's exactly. Where every GPU has its
// own counter difference from the job's start to its end (counterMJ: the
// agent's aggregate, else the hooks' readings, else its samples'), that
// is the GPU's energy and the job's is their sum. Else the job's is
// jobMJ, the ledger's sum of its samples' counter deltas, or, where no
// counter gave any, Σ power × time of its GPUs (powerJ, joules); it is
// split in proportion to each GPU's power × time, else its sampled
// seconds. counters says which. The job detail and the exports both take
// it so.
func splitEnergy(jobMJ int64, counterMJ, powerJ, sampleS []float64) (job int64, parts []int64, counters bool) {
	parts = make([]int64, len(counterMJ))
	if len(parts) > 0 && !slices.ContainsFunc(counterMJ, func(c float64) bool { return c <= 0 }) {
		for i, c := range counterMJ {
			parts[i] = int64(math.Round(c))
			job += parts[i]
		}
		return job, parts, true
	}
	weights := make([]float64, len(counterMJ))
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
	if !slices.ContainsFunc(weights, func(w float64) bool { return w > 0 }) {
		for i := range weights {
			weights[i] = 1 // nothing tells the GPUs apart: equal parts
		}
	}
	return jobMJ, apportion(jobMJ, weights), false
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
