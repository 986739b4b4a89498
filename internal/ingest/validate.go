package ingest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/store"
)

// Limits on what one record may hold; past them a file is quarantined.
const (
	maxGPUsPerNode  = 64
	maxNotes        = 64
	maxNoteLen      = 512
	maxNameLen      = 128
	maxProcs        = 4096
	maxJobsPerGPU   = 64
	maxInterval     = 3600.0
	maxSegmentLines = 10_000_000
	// Slurm job ids are 32-bit, its restart (requeue) count 16-bit: the
	// bound the prolog flags (record.MaxRestartCount).
	maxJobID   = math.MaxUint32
	maxRestart = record.MaxRestartCount
	// A counter or size stored in the ledger is a signed 64-bit integer:
	// above this it would read negative.
	maxStored = math.MaxInt64
	// intervalTolerance: a segment's interval may exceed agent.interval
	// by this fraction (a node configured a little differently); more is
	// refused.
	intervalTolerance = 0.1
	// maxMetrics bounds a sample's chosen metrics (the catalogue has
	// about 20); maxMetricValue its values (NVLink at 10^12 B/s is far
	// below).
	maxMetrics     = 128
	maxMetricValue = 1e18
)

var (
	nameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,127}$`)
	nodeRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	uuidRE = regexp.MustCompile(`^(GPU|MIG)-[0-9A-Za-z-]{8,80}$`)
	// metricNameRE is a chosen metric's name: lower case, unit last
	// (record.Catalogue); a name the catalogue lacks yet is kept.
	metricNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	schemaRE     = regexp.MustCompile(`^gpusuite\.([a-z]+)/v([0-9]+)$`)
	// Everything before this is garbage, not a real record time.
	minTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// Bad is a file that must be quarantined; Reason says why in one line.
type Bad struct{ Reason string }

func (b *Bad) Error() string { return b.Reason }

func bad(format string, args ...any) error { return &Bad{Reason: fmt.Sprintf(format, args...)} }

// Parsed is the content of one valid file.
type Parsed struct {
	Event    *record.Event
	GPUEvent *record.GPUEvent
	Header   *record.SegmentHeader
	Samples  []record.Sample
	JobGPUs  []record.JobGPU
	// ContentHash (sha256 hex) is of the records, not of the bytes: an
	// event as re-encoded, a segment's lines without surrounding white
	// space, so that the same records shipped re-encoded are the same.
	ContentHash string
}

// Records counts the records in the file.
func (p *Parsed) Records() int {
	n := len(p.Samples) + len(p.JobGPUs)
	if p.Event != nil || p.GPUEvent != nil {
		n++
	}
	return n
}

// Validator checks files against the record contracts.
type Validator struct {
	// Now bounds record times: nothing later than Now + MaxFuture.
	Now       time.Time
	MaxFuture time.Duration
	// MaxInterval bounds a segment's interval_s: agent.interval plus
	// intervalTolerance (MaxSegmentInterval); 0 means maxInterval.
	MaxInterval float64
}

// MaxSegmentInterval is the longest segment interval_s ingest accepts
// from agents configured with interval agent (agent.interval).
func MaxSegmentInterval(agent time.Duration) float64 {
	if agent <= 0 {
		return maxInterval
	}
	return min(maxInterval, agent.Seconds()*(1+intervalTolerance))
}

func (v Validator) maxInterval() float64 {
	if v.MaxInterval > 0 {
		return v.MaxInterval
	}
	return maxInterval
}

// jobOK is a Slurm job id and restart count Slurm can give.
func jobOK(job uint64, restart int) bool {
	return job != 0 && job <= maxJobID && restart >= 0 && restart <= maxRestart
}

func u64OK(p *uint64) bool { return p == nil || *p <= maxStored }

// Parse decodes and validates the file named name found in the directory
// of node. A *Bad error means quarantine.
func (v Validator) Parse(node, name string, data []byte) (*Parsed, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, bad("empty file")
	}
	first := data
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		first = data[:i]
	}
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(first, &head); err != nil {
		// A pretty-printed single record spans lines: try the whole file.
		if err2 := json.Unmarshal(data, &head); err2 != nil {
			return nil, bad("not a JSON record: %v", shorten(err.Error()))
		}
	}
	m := schemaRE.FindStringSubmatch(head.Schema)
	if m == nil {
		return nil, bad("unknown schema %q", shorten(head.Schema))
	}
	switch head.Schema {
	case record.EventSchema:
		return v.event(node, name, data)
	case record.SegmentSchema:
		return v.segment(node, name, data)
	case record.JobGPUSchema:
		return v.jobGPUs(node, name, data)
	case record.GPUEventSchema:
		return v.gpuEvent(node, name, data)
	}
	return nil, bad("schema %q is not one this gpuacct reads (%s, %s, %s, %s): a newer agent? upgrade gpuacct", head.Schema,
		record.EventSchema, record.SegmentSchema, record.JobGPUSchema, record.GPUEventSchema)
}

func shorten(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}

func strict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

func (v Validator) checkTime(what string, t time.Time) error {
	if t.Before(minTime) {
		return bad("%s %s is before 2000", what, t.Format(time.RFC3339))
	}
	if t.After(v.Now.Add(v.MaxFuture)) {
		return bad("%s %s is in the future (now %s)", what, t.UTC().Format(time.RFC3339), v.Now.UTC().Format(time.RFC3339))
	}
	return nil
}

func checkName(what, s string, re *regexp.Regexp, required bool) error {
	if s == "" {
		if required {
			return bad("%s is empty", what)
		}
		return nil
	}
	if !re.MatchString(s) {
		return bad("%s %q is not a valid name", what, shorten(s))
	}
	return nil
}

func checkNotes(what string, notes []string) error {
	if len(notes) > maxNotes {
		return bad("%s: %d notes (at most %d)", what, len(notes), maxNotes)
	}
	for _, n := range notes {
		if len(n) > maxNoteLen {
			return bad("%s: a note of %d bytes (at most %d)", what, len(n), maxNoteLen)
		}
	}
	return nil
}

func (v Validator) event(node, name string, data []byte) (*Parsed, error) {
	var ev record.Event
	if err := strict(bytes.TrimSpace(data), &ev); err != nil {
		return nil, bad("event: %s", shorten(err.Error()))
	}
	if ev.Kind != record.JobStart && ev.Kind != record.JobEnd {
		return nil, bad("event: kind %q is not job_start or job_end", shorten(string(ev.Kind)))
	}
	if err := checkName("event cluster", ev.Cluster, nodeRE, true); err != nil {
		return nil, err
	}
	if ev.Node != node {
		return nil, bad("event of node %q found in the directory of node %q", shorten(ev.Node), node)
	}
	j := ev.Job
	if j.ID == 0 || j.ID > maxJobID {
		return nil, bad("event: job id %d out of range (1..%d)", j.ID, uint64(maxJobID))
	}
	if j.RestartCount < 0 || j.RestartCount > maxRestart {
		return nil, bad("event: restart count %d out of range (0..%d)", j.RestartCount, maxRestart)
	}
	if want := record.EventKey(ev.Cluster, j.ID, j.RestartCount, ev.Node, ev.Kind); ev.Key != want {
		return nil, bad("event key %q does not match its content (%q)", shorten(ev.Key), want)
	}
	if want := record.EventFileName(ev.Cluster, j.ID, j.RestartCount, ev.Node, ev.Kind); name != want {
		return nil, bad("event file name %q does not match its key (%q)", name, want)
	}
	if err := v.checkTime("event time", ev.Time); err != nil {
		return nil, err
	}
	for _, f := range []struct{ what, val string }{{"user", j.User}, {"account", j.Account}, {"partition", j.Partition}} {
		if err := checkName("event "+f.what, f.val, nameRE, false); err != nil {
			return nil, err
		}
	}
	if len(j.GPUs) > maxGPUsPerNode || len(ev.GPUs) > maxGPUsPerNode {
		return nil, bad("event: %d GPUs on one node (at most %d)", max(len(j.GPUs), len(ev.GPUs)), maxGPUsPerNode)
	}
	for _, g := range ev.GPUs {
		if g.UUID != "" && !uuidRE.MatchString(g.UUID) {
			return nil, bad("event: GPU UUID %q is malformed", shorten(g.UUID))
		}
		if len(g.Model) > maxNameLen {
			return nil, bad("event: GPU model of %d bytes", len(g.Model))
		}
		if err := checkNotes("event gpu missing", g.Missing); err != nil {
			return nil, err
		}
		if !u64OK(g.EnergyMJ) {
			return nil, bad("event: GPU %s energy counter %d out of range", shorten(g.UUID), *g.EnergyMJ)
		}
	}
	if len(j.CUDAVisibleDevices) > 4096 || len(ev.Source) > maxNameLen {
		return nil, bad("event: oversized field")
	}
	if err := checkNotes("event quality", ev.Quality); err != nil {
		return nil, err
	}
	canon, err := json.Marshal(&ev)
	if err != nil {
		return nil, bad("event: %s", shorten(err.Error()))
	}
	sum := sha256.Sum256(canon)
	return &Parsed{Event: &ev, ContentHash: hex.EncodeToString(sum[:])}, nil
}

func (v Validator) segment(node, name string, data []byte) (*Parsed, error) {
	return v.segmentFrom(node, name, bytes.NewReader(data), sampleCap(bytes.Count(data, []byte{'\n'}), int64(len(data))))
}

// segmentFrom validates a segment read from r, line by line, so that
// ingest never holds a file's bytes next to its samples; lines (a hint,
// sampleCap) sizes the samples' slice.
func (v Validator) segmentFrom(node, name string, r io.Reader, lines int) (*Parsed, error) {
	tail := &tailReader{r: r}
	sc := bufio.NewScanner(tail)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	if !sc.Scan() {
		return nil, bad("segment: no header line")
	}
	var h record.SegmentHeader
	if err := strict(sc.Bytes(), &h); err != nil {
		return nil, bad("segment header: %s", shorten(err.Error()))
	}
	if err := checkName("segment cluster", h.Cluster, nodeRE, true); err != nil {
		return nil, err
	}
	if h.Node != node {
		return nil, bad("segment of node %q found in the directory of node %q", shorten(h.Node), node)
	}
	if want := record.SegmentKey(h.Cluster, h.Node, h.Seq); h.Key != want {
		return nil, bad("segment key %q does not match its header (%q)", shorten(h.Key), want)
	}
	if want := record.SegmentFileName(h.Cluster, h.Node, h.Seq); name != want {
		return nil, bad("segment file name %q does not match its key (%q)", name, want)
	}
	if lim := v.maxInterval(); !(h.Interval > 0 && h.Interval <= lim) {
		return nil, bad("segment interval %v s is outside (0, %.4g] (agent.interval + %.0f%%)", h.Interval, lim, intervalTolerance*100)
	}
	if err := v.checkTime("segment start", h.Start); err != nil {
		return nil, err
	}
	if err := checkHeaderMetrics(&h); err != nil {
		return nil, err
	}
	p := &Parsed{Header: &h}
	content := sha256.New()
	content.Write(bytes.TrimSpace(sc.Bytes()))
	p.Samples = make([]record.Sample, 0, min(maxSegmentLines, max(lines, 1)))
	var dec record.SampleDecoder
	names := newFileNames()
	line := 1
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if line > maxSegmentLines {
			return nil, bad("segment: more than %d lines", maxSegmentLines)
		}
		// Decoded in place: a sample on its own would be one more
		// allocation a line.
		p.Samples = append(p.Samples, record.Sample{})
		s := &p.Samples[len(p.Samples)-1]
		if !dec.Decode(b, s) {
			// Not the plain shape: encoding/json decides, and says why.
			*s = record.Sample{}
			if err := strict(b, s); err != nil {
				return nil, bad("segment line %d: %s", line, shorten(err.Error()))
			}
		}
		if err := v.sample(s, names); err != nil {
			return nil, bad("segment line %d: %s", line, err.(*Bad).Reason)
		}
		content.Write([]byte{'\n'})
		content.Write(b)
	}
	if err := sc.Err(); err != nil {
		return nil, bad("segment line %d: %s", line+1, shorten(err.Error()))
	}
	if tail.last != '\n' {
		return nil, bad("segment is truncated: the last line has no newline")
	}
	p.ContentHash = hex.EncodeToString(content.Sum(nil))
	return p, nil
}

// checkHeaderMetrics bounds what a segment header says of its metrics:
// the names chosen, and per GPU those it cannot give and why. The names
// become keys of the ledger's job metrics, the reasons their notes.
func checkHeaderMetrics(h *record.SegmentHeader) error {
	if len(h.Metrics) > maxMetrics {
		return bad("segment header: %d metrics (at most %d)", len(h.Metrics), maxMetrics)
	}
	for _, n := range h.Metrics {
		if !metricNameRE.MatchString(n) {
			return bad("segment header: metric name %q is not a catalogue-style name", shorten(n))
		}
	}
	if len(h.Unsupported) > maxGPUsPerNode {
		return bad("segment header: unsupported metrics of %d GPUs (at most %d)", len(h.Unsupported), maxGPUsPerNode)
	}
	for uuid, notes := range h.Unsupported {
		if !uuidRE.MatchString(uuid) {
			return bad("segment header: unsupported metrics of %q, which is not a GPU UUID", shorten(uuid))
		}
		if err := checkNotes("segment header unsupported metrics", notes); err != nil {
			return err
		}
		for _, n := range notes {
			if name, _, _ := strings.Cut(n, ":"); !metricNameRE.MatchString(strings.TrimSpace(name)) {
				return bad("segment header: unsupported metric %q is not a catalogue-style name", shorten(name))
			}
		}
	}
	return nil
}

func pctOK(p *uint32) bool { return p == nil || *p <= 100 }

// matchCache remembers the strings of one file that matched a pattern:
// a segment repeats a handful of UUIDs and metric names on every line.
type matchCache map[string]struct{}

// ok says whether s matches re, remembering up to most of them.
func (c matchCache) ok(re *regexp.Regexp, s string, most int) bool {
	if _, ok := c[s]; ok {
		return true
	}
	if !re.MatchString(s) {
		return false
	}
	if len(c) < most {
		c[s] = struct{}{}
	}
	return true
}

// fileNames are one file's well-formed UUIDs and metric names.
type fileNames struct{ uuids, metrics matchCache }

func newFileNames() fileNames { return fileNames{uuids: matchCache{}, metrics: matchCache{}} }

func (v Validator) sample(s *record.Sample, names fileNames) error {
	if err := v.checkTime("sample time", s.Time); err != nil {
		return err
	}
	if !names.uuids.ok(uuidRE, s.UUID, maxGPUsPerNode) {
		return bad("GPU UUID %q is malformed", shorten(s.UUID))
	}
	if err := migSample(s); err != nil {
		return err
	}
	if s.Index < 0 || s.Index >= maxGPUsPerNode {
		return bad("GPU index %d out of range", s.Index)
	}
	if !pctOK(s.GPUUtil) || !pctOK(s.MemUtil) {
		return bad("utilization above 100%%")
	}
	if len(s.Jobs) > maxJobsPerGPU || len(s.Procs) > maxProcs {
		return bad("%d jobs, %d processes on one GPU", len(s.Jobs), len(s.Procs))
	}
	total := 0.0
	if s.PowerMW != nil && *s.PowerMW > store.MaxGPUPowerMW {
		return bad("power %d mW is more than a GPU draws (%d W)", *s.PowerMW, store.MaxGPUPowerMW/1000)
	}
	for _, f := range []struct {
		what string
		v    *uint64
	}{{"energy counter", s.EnergyMJ}, {"memory used", s.MemUsedMiB}, {"memory total", s.MemTotalMiB},
		{"throttle reasons", s.Throttle}, {"ECC errors", s.ECCErrors}, {"XID errors", s.XIDErrors}} {
		if !u64OK(f.v) {
			return bad("%s %d out of range", f.what, *f.v)
		}
	}
	for _, j := range s.Jobs {
		if !jobOK(j.Job, j.Restart) {
			return bad("job %d restart %d out of range (job 1..%d, restart 0..%d)", j.Job, j.Restart, uint64(maxJobID), maxRestart)
		}
		// A job with no process on a GPU shared with a job that has one
		// gets share 0: it held the GPU but used none of it.
		if !(j.Share >= 0 && j.Share <= 1) {
			return bad("job %d share %v is outside [0, 1]", j.Job, j.Share)
		}
		total += j.Share
	}
	if total > 1.000001 {
		return bad("job shares add up to %v (over 1)", total)
	}
	if len(s.Metrics) > maxMetrics {
		return bad("%d metrics in one sample (at most %d)", len(s.Metrics), maxMetrics)
	}
	for name, x := range s.Metrics {
		if !names.metrics.ok(metricNameRE, name, maxMetrics) {
			return bad("metric name %q is not a catalogue-style name", shorten(name))
		}
		if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > maxMetricValue {
			return bad("metric %s = %v is not a finite value below %g", name, x, maxMetricValue)
		}
	}
	for _, p := range s.Procs {
		if len(p.CgroupError) > maxNoteLen {
			return bad("oversized cgroup error")
		}
	}
	return checkNotes("sample missing", s.Missing)
}

func (v Validator) jobGPUs(node, name string, data []byte) (*Parsed, error) {
	p := &Parsed{}
	line := 0
	for _, b := range bytes.Split(data, []byte("\n")) {
		line++
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		var a record.JobGPU
		if err := strict(b, &a); err != nil {
			// One pretty-printed record.
			if line == 1 {
				if err2 := strict(bytes.TrimSpace(data), &a); err2 == nil {
					if err := v.jobGPU(node, name, &a, true); err != nil {
						return nil, err
					}
					p.JobGPUs = append(p.JobGPUs, a)
					return p, nil
				}
			}
			return nil, bad("aggregate line %d: %s", line, shorten(err.Error()))
		}
		if err := v.jobGPU(node, name, &a, false); err != nil {
			return nil, err
		}
		p.JobGPUs = append(p.JobGPUs, a)
	}
	if len(p.JobGPUs) == 1 {
		if want := record.JobGPUFileName(p.JobGPUs[0].Cluster, p.JobGPUs[0].Job, p.JobGPUs[0].RestartCount, node, p.JobGPUs[0].UUID, p.JobGPUs[0].Seq); name != want {
			return nil, bad("aggregate file name %q does not match its key (%q)", name, want)
		}
	}
	return p, nil
}

func (v Validator) jobGPU(node, name string, a *record.JobGPU, _ bool) error {
	if a.Schema != record.JobGPUSchema {
		return bad("aggregate: schema %q", shorten(a.Schema))
	}
	if err := checkName("aggregate cluster", a.Cluster, nodeRE, true); err != nil {
		return err
	}
	if a.Node != node {
		return bad("aggregate of node %q found in the directory of node %q", shorten(a.Node), node)
	}
	if !jobOK(a.Job, a.RestartCount) {
		return bad("aggregate: job %d restart %d out of range (job 1..%d, restart 0..%d)", a.Job, a.RestartCount, uint64(maxJobID), maxRestart)
	}
	if !uuidRE.MatchString(a.UUID) {
		return bad("aggregate: GPU UUID %q is malformed", shorten(a.UUID))
	}
	if want := record.JobGPUKey(a.Cluster, a.Job, a.RestartCount, a.Node, a.UUID); a.Key != want {
		return bad("aggregate key %q does not match its content (%q)", shorten(a.Key), want)
	}
	for _, f := range []struct{ what, val string }{{"user", a.User}, {"account", a.Account}, {"partition", a.Partition}} {
		if err := checkName("aggregate "+f.what, f.val, nameRE, false); err != nil {
			return err
		}
	}
	if err := v.checkTime("aggregate first", a.First); err != nil {
		return err
	}
	if err := v.checkTime("aggregate last", a.Last); err != nil {
		return err
	}
	if a.Last.Before(a.First) || a.UtilMax > 100 || a.SampleSeconds < 0 || a.UtilSeconds < 0 || a.IdleSeconds < 0 ||
		a.UtilSeconds > a.SampleSeconds*1.000001+1e-9 || len(a.Model) > maxNameLen || len(a.Quality) > maxNotes {
		return bad("aggregate %s: inconsistent figures", a.Key)
	}
	if a.IdleSeconds > a.SampleSeconds*1.000001+1e-9 {
		return bad("aggregate %s: idle %.6g s is more than the %.6g s sampled", a.Key, a.IdleSeconds, a.SampleSeconds)
	}
	// The samples cover first..last and one interval after; the energy
	// runs from the prolog's reading to the epilog's, an interval or so
	// either side of them.
	span := a.Last.Sub(a.First).Seconds() + v.maxInterval()
	if a.SampleSeconds > span*1.000001+1 {
		return bad("aggregate %s: %.6g s sampled between %s and %s", a.Key, a.SampleSeconds,
			a.First.UTC().Format(time.RFC3339), a.Last.UTC().Format(time.RFC3339))
	}
	if lim := (span + 2*v.maxInterval() + 60) * store.MaxGPUPowerMW; a.EnergyMJ > maxStored || float64(a.EnergyMJ) > lim {
		return bad("aggregate %s: energy %d mJ is more than a GPU draws (%d W) in %.6g s", a.Key, a.EnergyMJ,
			store.MaxGPUPowerMW/1000, span+2*v.maxInterval()+60)
	}
	if a.MemMaxMiB > maxStored || a.MemTotalMiB > maxStored || a.Samples > maxStored {
		return bad("aggregate %s: figure out of range", a.Key)
	}
	for k := range a.Quality {
		if len(k) > maxNoteLen || strings.ContainsAny(k, "\n\x00") {
			return bad("aggregate %s: bad quality key", a.Key)
		}
	}
	return nil
}

// What a node may say (invariant 8) is judged here: the checks above on
// the file alone, and below the ledger's verdict on what only its rows
// can tell (store.Rejected, from the store's write_checks.go: a GPU
// another node owns, a job with no event from the node yet, samples
// overlapping stored ones, energy past the stored counter), turned into
// quarantine or a wait.

// maxXid bounds an Xid number: NVIDIA's run to a few hundred; more is
// garbage, not a driver's report.
const maxXid = 1 << 16

// gpuEvent validates a GPU event (gpusuite.gpuevent/v1): the node's own,
// named and keyed as its content says, a kind, code and reason that go
// together, a time not in the future.
func (v Validator) gpuEvent(node, name string, data []byte) (*Parsed, error) {
	var ev record.GPUEvent
	if err := strict(bytes.TrimSpace(data), &ev); err != nil {
		return nil, bad("gpu event: %s", shorten(err.Error()))
	}
	if err := checkName("gpu event cluster", ev.Cluster, nodeRE, true); err != nil {
		return nil, err
	}
	if ev.Node != node {
		return nil, bad("gpu event of node %q found in the directory of node %q", shorten(ev.Node), node)
	}
	if !uuidRE.MatchString(ev.UUID) {
		return nil, bad("gpu event: GPU UUID %q is malformed", shorten(ev.UUID))
	}
	if ev.Index < 0 || ev.Index >= maxGPUsPerNode {
		return nil, bad("gpu event: GPU index %d out of range", ev.Index)
	}
	switch ev.Kind {
	case record.GPUXid:
		if ev.Code == 0 || ev.Code > maxXid {
			return nil, bad("gpu event: Xid %d out of range (1..%d)", ev.Code, maxXid)
		}
	case record.GPUECCSingle, record.GPUECCDouble:
		if ev.Code > maxStored {
			return nil, bad("gpu event: ECC data %d out of range", ev.Code)
		}
	case record.GPUThrottleStart, record.GPUThrottleEnd:
		if ev.Code != 0 {
			return nil, bad("gpu event: %s with code %d (throttling has none)", ev.Kind, ev.Code)
		}
		switch ev.Reason {
		case record.ThrottlePower, record.ThrottleThermal, record.ThrottleHWSlowdown:
		default:
			return nil, bad("gpu event: throttle reason %q is not %s, %s or %s", shorten(ev.Reason),
				record.ThrottlePower, record.ThrottleThermal, record.ThrottleHWSlowdown)
		}
	default:
		return nil, bad("gpu event: kind %q is not %s, %s, %s, %s or %s", shorten(string(ev.Kind)),
			record.GPUXid, record.GPUECCSingle, record.GPUECCDouble, record.GPUThrottleStart, record.GPUThrottleEnd)
	}
	if ev.Reason != "" && ev.Kind != record.GPUThrottleStart && ev.Kind != record.GPUThrottleEnd {
		return nil, bad("gpu event: %s with a reason (only throttling has one)", ev.Kind)
	}
	if err := v.checkTime("gpu event time", ev.Time); err != nil {
		return nil, err
	}
	if want := record.GPUEventKey(ev.Cluster, ev.Node, ev.UUID, ev.Time, ev.Kind, ev.Code, ev.Reason); ev.Key != want {
		return nil, bad("gpu event key %q does not match its content (%q)", shorten(ev.Key), want)
	}
	if want := record.GPUEventFileName(ev.Cluster, ev.Node, ev.UUID, ev.Time, ev.Kind, ev.Code, ev.Reason); name != want {
		return nil, bad("gpu event file name %q does not match its key (%q)", name, want)
	}
	if len(ev.Jobs) > maxJobsPerGPU {
		return nil, bad("gpu event: %d jobs on one GPU (at most %d)", len(ev.Jobs), maxJobsPerGPU)
	}
	for _, j := range ev.Jobs {
		if !jobOK(j.Job, j.Restart) {
			return nil, bad("gpu event: job %d restart %d out of range (job 1..%d, restart 0..%d)", j.Job, j.Restart, uint64(maxJobID), maxRestart)
		}
	}
	if ev.Suppressed > maxStored {
		return nil, bad("gpu event: suppressed %d out of range", ev.Suppressed)
	}
	canon, err := json.Marshal(&ev)
	if err != nil {
		return nil, bad("gpu event: %s", shorten(err.Error()))
	}
	sum := sha256.Sum256(canon)
	return &Parsed{GPUEvent: &ev, ContentHash: hex.EncodeToString(sum[:])}, nil
}

// rejected handles a file the store refused as not its node's to say. A
// file that names a job with no event from its node yet waits in incoming
// (events come first in a pass, but may be shipped a pass later) for up
// to ingest.grace after it was shipped or its newest record, whichever is
// later; then, and for every other reason, it is quarantined.
func (in *Ingester) rejected(f file, p *Parsed, rj *store.Rejected, now time.Time, res *Result) {
	if rj.Wait {
		newest := newestRecord(p)
		if st, err := os.Lstat(f.path); err == nil && st.ModTime().After(newest) {
			newest = st.ModTime()
		}
		wait := in.d.Config.Ingest.Grace.Duration
		if now.Sub(newest) < wait {
			res.Deferred++
			if in.deferred != nil {
				in.deferred[f.path] = true
			}
			in.d.Log.Info("file waits for its job's event", "node", f.node, "file", f.path, "reason", rj.Reason)
			return
		}
		in.bad(f, fmt.Sprintf("%s after waiting %s (ingest.grace)", rj.Reason, wait), res)
		return
	}
	in.bad(f, rj.Reason, res)
}

func newestRecord(p *Parsed) time.Time {
	var t time.Time
	if p.Event != nil {
		t = p.Event.Time
	}
	if p.GPUEvent != nil {
		t = p.GPUEvent.Time
	}
	for i := range p.Samples {
		if p.Samples[i].Time.After(t) {
			t = p.Samples[i].Time
		}
	}
	for i := range p.JobGPUs {
		if p.JobGPUs[i].Last.After(t) {
			t = p.JobGPUs[i].Last
		}
	}
	return t
}

// asRejected is err as a *store.Rejected, or nil.
func asRejected(err error) *store.Rejected {
	var rj *store.Rejected
	if errors.As(err, &rj) {
		return rj
	}
	return nil
}

// migSample holds a MIG instance's sample to its shape: a MIG UUID names
// its parent GPU, only a MIG UUID has one, and its share of the parent's
// energy is a fraction. Whose GPU the parent is, the ledger judges
// (store.CheckMIGParents).
func migSample(s *record.Sample) error {
	mig := strings.HasPrefix(s.UUID, "MIG-")
	parent, share := s.Parent(), s.ParentShare()
	switch {
	case mig && parent == "":
		return bad("MIG instance %s names no parent GPU", s.UUID)
	case !mig && s.SampleMIG != nil:
		return bad("GPU %s is not a MIG instance but names parent %q", s.UUID, shorten(parent))
	case mig && (!strings.HasPrefix(parent, "GPU-") || !uuidRE.MatchString(parent)):
		return bad("MIG instance %s: parent %q is not a GPU UUID", s.UUID, shorten(parent))
	case !(share >= 0 && share <= 1):
		return bad("MIG instance %s: parent share %v is outside [0, 1]", s.UUID, share)
	}
	return nil
}
