package ingest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// slurmRun is one accounting record of a job, as slurmdbd keeps it: a
// requeued job has one per run.
type slurmRun struct {
	id                             uint64
	start, end, state, exit, jobID string
	// resources is the run's AllocCPUS|TotalCPU|ReqMem|MaxRSS|TimelimitRaw|
	// ElapsedRaw|NNodes ("" a run of 1 CPU, no steps' resources); steps, its
	// steps' names and MaxRSS, listed without -X.
	resources string
	steps     [][2]string
	// submit is sacct's Submit ("" answers Unknown).
	submit string
}

// fakeSacct answers like sacct 22.05 from records: -j ID[,ID] selects (an
// array task's id also selects the array's other tasks, given as jobID
// "ID_N"), -D lists every run, else only a job's latest, -o picks the
// fields, --parsable2 --noheader format. calls counts the calls.
func fakeSacct(records *[]slurmRun, calls *[]string) Sacct {
	return func(ctx context.Context, args ...string) ([]byte, error) {
		*calls = append(*calls, strings.Join(args, " "))
		var ids []string
		var fields []string
		dup, alloc := false, false
		for i := 0; i < len(args); i++ {
			switch args[i] {
			case "-X":
				alloc = true
			case "-j":
				i++
				ids = strings.Split(args[i], ",")
			case "-o":
				i++
				fields = strings.Split(args[i], ",")
			case "-D", "--duplicates":
				dup = true
			}
		}
		var picked []slurmRun
		for _, r := range *records {
			raw := strconv.FormatUint(r.id, 10)
			if !slices.Contains(ids, raw) && !slices.ContainsFunc(ids, func(id string) bool { return strings.HasPrefix(r.jobID, id+"_") }) {
				continue
			}
			if !dup {
				// only the latest run of the job
				picked = slices.DeleteFunc(picked, func(p slurmRun) bool { return p.id == r.id })
			}
			picked = append(picked, r)
		}
		var b strings.Builder
		for _, r := range picked {
			steps := [][2]string{{"", ""}}
			if !alloc {
				steps = append(steps, r.steps...)
			}
			for _, st := range steps {
				line, err := fakeSacctLine(r, fields, st[0], st[1])
				if err != nil {
					return nil, err
				}
				b.WriteString(line)
			}
		}
		return []byte(b.String()), nil
	}
}

// sacctResourceNames are the resource fields fakeSacct knows, in the order of
// slurmRun.resources.
var sacctResourceNames = []string{"AllocCPUS", "TotalCPU", "ReqMem", "MaxRSS", "TimelimitRaw", "ElapsedRaw", "NNodes"}

// fakeSacctLine is run r's line of the given fields, or its step's (step
// the step's name, rss its MaxRSS); an unknown field is sacct's error.
func fakeSacctLine(r slurmRun, fields []string, step, rss string) (string, error) {
	resources := strings.Split(cmpOr(r.resources, "1|00:00:00|0||UNLIMITED|0|1"), "|")
	var vals []string
	for _, f := range fields {
		switch f {
		case "JobIDRaw":
			id := strconv.FormatUint(r.id, 10)
			if step != "" {
				id += "." + step
			}
			vals = append(vals, id)
		case "JobID":
			vals = append(vals, cmpOr(r.jobID, strconv.FormatUint(r.id, 10)))
		case "Start":
			vals = append(vals, r.start)
		case "End":
			vals = append(vals, r.end)
		case "State":
			vals = append(vals, r.state)
		case "ExitCode":
			vals = append(vals, r.exit)
		case "Comment":
			vals = append(vals, "")
		case "QOS":
			vals = append(vals, "normal")
		case "MaxRSS":
			vals = append(vals, rss)
		case "Submit":
			vals = append(vals, cmpOr(r.submit, "Unknown"))
		case "AllocTRES":
			// An eighth resource field, where the run has one.
			tres := ""
			if len(resources) > 7 && step == "" {
				tres = resources[7]
			}
			vals = append(vals, tres)
		default:
			i := slices.Index(sacctResourceNames, f)
			if i < 0 {
				return "", fmt.Errorf("sacct: invalid field %q", f)
			}
			vals = append(vals, resources[i])
		}
	}
	return strings.Join(vals, "|") + "\n", nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestRequeuedSacctStart: restart 0 of a requeued job has no start event;
// its start is the first run's in sacct, not the latest run's (review R2).
func TestRequeuedSacctStart(t *testing.T) {
	e := newEnv(t)
	s := e.open(t)
	defer s.Close()
	e.put(t, evFile(t, "gpu001", 77, 0, record.JobEnd, t0.Add(30*time.Minute), 0),
		segFile(t, "gpu001", 1, 10, every(t0, 10*time.Second, 180, func(at time.Time) record.Sample { return busy("gpu001", 0, at, 77) })))
	records := []slurmRun{
		{id: 77, start: "2026-03-02T00:00:00", end: "2026-03-02T00:30:00", state: "REQUEUED", exit: "0:0"},
		{id: 77, start: "2026-03-02T02:00:00", end: "Unknown", state: "RUNNING", exit: "0:0"}, // restart 1
	}
	var calls []string
	now := t0.Add(3 * time.Hour)
	if _, err := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid(),
		Sacct: fakeSacct(&records, &calls), SacctLocation: time.UTC}).Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	alloc := query[float64](t, s, `SELECT alloc_gpu_s FROM jobs WHERE job_id = 77 AND restart = 0`)
	src := query[string](t, s, `SELECT n.start_source || ' est=' || n.start_estimated FROM job_nodes n JOIN jobs j ON j.id=n.job WHERE j.job_id = 77`)
	if alloc != 1800 || src != "sacct est=0" {
		t.Errorf("restart 0 allocated %v GPU-s, start from %s; want 1800 (00:00-00:30) from sacct est=0", alloc, src)
	}
}

// TestSacctStartNoRun: sacct lists no run for the restart, or a run that
// started after the part's end: the start stays an estimate.
func TestSacctStartNoRun(t *testing.T) {
	tests := []struct {
		name    string
		restart int
		records []slurmRun
	}{
		{"no run ends near the epilog's end", 1, []slurmRun{{id: 77, start: "2026-03-02T00:00:00", end: "2026-03-02T00:15:00", state: "REQUEUED", exit: "0:0"}}},
		{"an older job of the same id", 0, []slurmRun{{id: 77, start: "2025-03-02T00:00:00", end: "2025-03-02T00:30:00", state: "COMPLETED", exit: "0:0"}}},
		{"run starts after the end", 0, []slurmRun{{id: 77, start: "2026-03-02T02:00:00", end: "2026-03-02T03:00:00", state: "COMPLETED", exit: "0:0"}}},
		{"another job's line", 0, []slurmRun{{id: 78, jobID: "77_1", start: "2026-03-02T00:01:00", end: "2026-03-02T00:30:00", state: "COMPLETED", exit: "0:0"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			s := e.open(t)
			defer s.Close()
			e.put(t, evFile(t, "gpu001", 77, tc.restart, record.JobEnd, t0.Add(30*time.Minute), 0),
				segFile(t, "gpu001", 1, 10, []record.Sample{func() record.Sample {
					sm := busy("gpu001", 0, t0.Add(5*time.Minute), 77)
					sm.Jobs[0].Restart = tc.restart
					return sm
				}()}))
			var calls []string
			now := t0.Add(3 * time.Hour)
			if _, err := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid(),
				Sacct: fakeSacct(&tc.records, &calls), SacctLocation: time.UTC}).Pass(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := query[string](t, s, `SELECT n.start_source || ' est=' || n.start_estimated || ' ' || n.start FROM job_nodes n`)
			if want := fmt.Sprintf("first_sample est=1 %d", t0.Add(5*time.Minute).Unix()); got != want {
				t.Errorf("start %q, want %q", got, want)
			}
		})
	}
}

// TestEpilogKeepsSacctEnd: sacct closed the job at Slurm's end; the
// epilog's end arriving later changes neither the end nor Slurm's exit
// code (review R3, invariant 10). An estimated end still gives way.
func TestEpilogKeepsSacctEnd(t *testing.T) {
	tests := []struct {
		name string
		run  *slurmRun // nil: sacct fails
		want jobRow
		exit int64 // -1: none
	}{
		{"sacct", &slurmRun{id: 77, start: "2026-03-02T00:00:00", end: "2026-03-02T00:10:00", state: "FAILED", exit: "3:0"}, jobRow{End: t0.Unix() + 600, Source: "sacct", State: "failed", Alloc: 600}, 3},
		{"last sample", nil, jobRow{End: t0.Unix() + 607, Source: "epilog", State: "completed", Alloc: 607}, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			s := e.open(t)
			defer s.Close()
			e.put(t, evFile(t, "gpu001", 77, 0, record.JobStart, t0, 0))
			var records []slurmRun
			var calls []string
			sacct := fakeSacct(&records, &calls)
			if tc.run == nil {
				sacct = func(context.Context, ...string) ([]byte, error) { return nil, fmt.Errorf("slurmdbd unreachable") }
			} else {
				records = append(records, *tc.run)
			}
			now := t0.Add(3 * time.Hour)
			in := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid(), Sacct: sacct, SacctLocation: time.UTC})
			if _, err := in.Pass(context.Background()); err != nil {
				t.Fatal(err)
			}
			e.put(t, evFile(t, "gpu001", 77, 0, record.JobEnd, t0.Add(10*time.Minute+7*time.Second), 0))
			if _, err := in.Pass(context.Background()); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, job(t, s.Path, 77)); diff != "" {
				t.Errorf("after the epilog (-want +got):\n%s", diff)
			}
			if code := query[int64](t, s, `SELECT coalesce(exit_code, -1) FROM jobs WHERE job_id = 77`); code != tc.exit {
				t.Errorf("exit code %d, want %d", code, tc.exit)
			}
			if a := query[int64](t, s, `SELECT sum(alloc_gpu_s) FROM rollup_daily`); a != tc.want.Alloc {
				t.Errorf("rollup allocated %d GPU-s, want %d", a, tc.want.Alloc)
			}
		})
	}
}

// TestRequeuedOpenRun: restart 0 lost its node (no epilog) and Slurm
// requeued it; restart 1 runs elsewhere. Restart 0 ends at its REQUEUED
// line's end in sacct -D, not at restart 1's (review R4); without sacct,
// no later than restart 1's start.
func TestRequeuedOpenRun(t *testing.T) {
	tests := []struct {
		name  string
		sacct bool
		want  jobRow
	}{
		{"sacct", true, jobRow{End: t0.Unix() + 3500, Source: "sacct", State: "requeued", Alloc: 3500}},
		{"sacct lists only the latest run", false, jobRow{End: t0.Unix() + 3600, Estimated: true, Source: "last_sample", State: "unknown", Alloc: 3600}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			s := e.open(t)
			defer s.Close()
			// restart 0's samples run on (a stale agent clock or a
			// late flush) past restart 1's start.
			e.put(t, evFile(t, "gpu001", 77, 0, record.JobStart, t0, 0),
				evFile(t, "gpu002", 77, 1, record.JobStart, t0.Add(time.Hour), 0),
				segFile(t, "gpu001", 1, 10, every(t0.Add(time.Hour+time.Minute), 10*time.Second, 1, func(at time.Time) record.Sample { return busy("gpu001", 0, at, 77) })))
			records := []slurmRun{
				{id: 77, start: "2026-03-02T00:00:00", end: "2026-03-02T00:58:20", state: "REQUEUED", exit: "0:0"},
				{id: 77, start: "2026-03-02T01:00:00", end: "Unknown", state: "RUNNING", exit: "0:0"},
			}
			if !tc.sacct {
				records = records[1:]
			}
			var calls []string
			now := t0.Add(3 * time.Hour)
			in := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid(),
				Sacct: fakeSacct(&records, &calls), SacctLocation: time.UTC})
			if _, err := in.Pass(context.Background()); err != nil {
				t.Fatal(err)
			}
			records[len(records)-1].end, records[len(records)-1].state = "2026-03-02T03:00:00", "COMPLETED"
			e.put(t, evFile(t, "gpu002", 77, 1, record.JobEnd, t0.Add(3*time.Hour), 0))
			now = t0.Add(4 * time.Hour)
			if _, err := in.Pass(context.Background()); err != nil {
				t.Fatal(err)
			}
			var got jobRow
			var end *int64
			var src *string
			ledgerdb.Row(t, s.Path, `SELECT end, end_estimated, end_source, state, alloc_gpu_s FROM jobs WHERE job_id = 77 AND restart = 0`, nil,
				&end, &got.Estimated, &src, &got.State, &got.Alloc)
			if end != nil {
				got.End = *end
			}
			if src != nil {
				got.Source = *src
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("restart 0 (-want +got):\n%s", diff)
			}
			if a1 := query[int64](t, s, `SELECT alloc_gpu_s FROM jobs WHERE job_id = 77 AND restart = 1`); a1 != 2*3600 {
				t.Errorf("restart 1 allocated %d GPU-s, want 7200", a1)
			}
			for _, c := range calls {
				if !strings.HasSuffix(c, "-X -D --parsable2 --noheader -o "+sacctRunFields) && !strings.HasSuffix(c, " -D --parsable2 --noheader -o "+sacctResourceFields) &&
					!strings.HasSuffix(c, "-o JobIDRaw,JobID,QOS,Comment") {
					t.Errorf("sacct asked %q", c)
				}
			}
		})
	}
}

// TestFirstSampleOfRestart: restart 1 without a start event takes its own
// first sample, not restart 0's earlier one on a GPU restart 0 shared
// with another job (a shared GPU's jobs are stored as JSON).
func TestFirstSampleOfRestart(t *testing.T) {
	e := newEnv(t)
	s := e.open(t)
	defer s.Close()
	shared := busy("gpu001", 0, t0.Add(2*time.Minute), 77)
	shared.Jobs = []record.JobShare{{Job: 77, Share: 0.5}, {Job: 88, Share: 0.5}}
	second := every(t0.Add(20*time.Minute), 10*time.Second, 6, func(at time.Time) record.Sample {
		sm := busy("gpu001", 0, at, 77)
		sm.Jobs[0].Restart = 1
		return sm
	})
	e.put(t, evFile(t, "gpu001", 77, 0, record.JobStart, t0, 0), evFile(t, "gpu001", 77, 0, record.JobEnd, t0.Add(10*time.Minute), 0),
		evFile(t, "gpu001", 88, 0, record.JobStart, t0, 0), evFile(t, "gpu001", 88, 0, record.JobEnd, t0.Add(10*time.Minute), 0),
		evFile(t, "gpu001", 77, 1, record.JobEnd, t0.Add(30*time.Minute), 0),
		segFile(t, "gpu001", 1, 10, append([]record.Sample{shared}, second...)))
	if res := e.pass(t, s, t0.Add(time.Hour)); res.Quarantined != 0 {
		t.Fatalf("pass: %+v", res)
	}
	got := query[string](t, s, `SELECT n.start_source || ' ' || n.start FROM job_nodes n JOIN jobs j ON j.id = n.job WHERE j.job_id = 77 AND j.restart = 1`)
	if want := fmt.Sprintf("first_sample %d", t0.Add(20*time.Minute).Unix()); got != want {
		t.Errorf("restart 1 start %q, want %q", got, want)
	}
}

// TestSacctStartRetried: a failed sacct call leaves the start at the
// first sample, flagged, and the part is asked again next pass, until a
// day after its end; after one failed call a pass asks no more.
func TestSacctStartRetried(t *testing.T) {
	tests := []struct {
		name   string
		later  time.Duration // second pass, after t0
		source string
		calls  int // sacct calls for starts in the second pass
	}{
		{"answered next pass", 2 * time.Hour, "sacct est=0 2026-03-02T00:01:00Z", 2},
		{"given up a day after the end", 30*time.Minute + startsRetry + time.Minute, unanswered + " est=1 2026-03-02T00:05:00Z", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			s := e.open(t)
			defer s.Close()
			var files []forged
			for i, id := range []uint64{77, 78} {
				files = append(files, evFile(t, "gpu001", id, 0, record.JobEnd, t0.Add(30*time.Minute), i),
					segFile(t, "gpu001", uint64(i+1), 10, every(t0.Add(5*time.Minute), 10*time.Second, 6,
						func(at time.Time) record.Sample { return busy("gpu001", i, at, id) })))
			}
			e.put(t, files...)
			var calls []string
			records := []slurmRun{
				{id: 77, start: "2026-03-02T00:01:00", end: "2026-03-02T00:30:00", state: "COMPLETED", exit: "0:0"},
				{id: 78, start: "2026-03-02T00:01:00", end: "2026-03-02T00:30:00", state: "COMPLETED", exit: "0:0"},
			}
			answer := fakeSacct(&records, &calls)
			up := false
			var phase reconcilePhase
			sacct := func(ctx context.Context, args ...string) ([]byte, error) {
				if phase.reconciling(args) {
					return nil, nil // job times: TestReconcile*
				}
				if !up {
					calls = append(calls, strings.Join(args, " "))
					return nil, fmt.Errorf("slurmdbd unreachable")
				}
				return answer(ctx, args...)
			}
			now := t0.Add(time.Hour)
			in := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid(), Sacct: sacct, SacctLocation: time.UTC})
			starts := func() (sources []string, n int) {
				ledgerdb.Query(t, s.Path, `SELECT start_source, start_estimated, start, quality FROM job_nodes ORDER BY job`, nil,
					func(scan func(...any)) {
						var src, q string
						var est, start int64
						scan(&src, &est, &start, &q)
						sources = append(sources, fmt.Sprintf("%s est=%d %s (%s)", src, est, time.Unix(start, 0).UTC().Format(time.RFC3339), q))
					})
				for _, c := range calls {
					if strings.HasSuffix(c, sacctRunFields) {
						n++
					}
				}
				calls = nil
				return sources, n
			}
			if _, err := in.Pass(context.Background()); err != nil {
				t.Fatal(err)
			}
			note := "start_from_" + unanswered
			got, n := starts()
			want := []string{unanswered + " est=1 2026-03-02T00:05:00Z (" + note + ")", unanswered + " est=1 2026-03-02T00:05:00Z (" + note + ")"}
			if diff := cmp.Diff(want, got); diff != "" || n != 1 {
				t.Errorf("sacct down: %d calls for starts (want 1), starts (-want +got):\n%s", n, diff)
			}
			up, now, phase = true, t0.Add(tc.later), reconcilePhase{}
			if _, err := in.Pass(context.Background()); err != nil {
				t.Fatal(err)
			}
			got, n = starts()
			q := note
			if strings.HasPrefix(tc.source, "sacct") {
				q += "; start_from_sacct"
			}
			want = []string{tc.source + " (" + q + ")", tc.source + " (" + q + ")"}
			if diff := cmp.Diff(want, got); diff != "" || n != tc.calls {
				t.Errorf("second pass: %d calls for starts (want %d), starts (-want +got):\n%s", n, tc.calls, diff)
			}
		})
	}
}

func TestParseSacctRuns(t *testing.T) {
	at := func(h, m int) time.Time { return t0.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
	code := func(v int) *int { return &v }
	tests := []struct {
		name    string
		out     string
		restart int
		started time.Time // the prolog's start of the run
		want    sacctInfo
		wantErr bool
	}{
		{"one run", "77|2026-03-02T00:00:00|2026-03-02T00:10:00|COMPLETED|0:0\n", 0, at(0, 0), sacctInfo{end: at(0, 10), state: "completed", code: code(0)}, false},
		{"cancelled by uid", "77|2026-03-02T00:00:00|2026-03-02T00:10:00|CANCELLED by 0|0:15\n", 0, at(0, 0), sacctInfo{end: at(0, 10), state: "cancelled", code: code(0)}, false},
		{"running", "77|2026-03-02T00:00:00|Unknown|RUNNING|0:0\n", 0, at(0, 0), sacctInfo{running: true, state: "running", code: code(0)}, false},
		{"requeued, listed after its successor", "77|2026-03-02T01:00:00|Unknown|RUNNING|0:0\n77|2026-03-02T00:00:00|2026-03-02T00:50:00|REQUEUED|0:0\n", 0, at(0, 0),
			sacctInfo{end: at(0, 50), state: "requeued", code: code(0)}, false},
		{"second run", "77|2026-03-02T00:00:00|2026-03-02T00:50:00|REQUEUED|0:0\n77|2026-03-02T01:00:00|2026-03-02T02:00:00|FAILED|2:0\n", 1, at(1, 0),
			sacctInfo{end: at(2, 0), state: "failed", code: code(2)}, false},
		{"end past the next run's start", "77|2026-03-02T00:00:00|2026-03-02T01:30:00|NODE_FAIL|1:0\n77|2026-03-02T01:00:00|Unknown|RUNNING|0:0\n", 0, at(0, 0),
			sacctInfo{end: at(1, 0), state: "node_fail", code: code(1)}, false},
		{"running with a later run", "77|2026-03-02T00:00:00|Unknown|RUNNING|0:0\n77|2026-03-02T01:00:00|Unknown|RUNNING|0:0\n", 0, at(0, 0),
			sacctInfo{end: at(1, 0), state: "requeued"}, false},
		{"pending requeued run not counted", "77|2026-03-02T00:00:00|2026-03-02T00:50:00|REQUEUED|0:0\n77|Unknown|Unknown|PENDING|0:0\n", 1, at(1, 0), sacctInfo{}, true},
		{"array's other tasks", "78|2026-03-02T00:00:00|2026-03-02T00:20:00|COMPLETED|0:0\n77|2026-03-02T00:05:00|2026-03-02T00:10:00|COMPLETED|0:0\n", 0, at(0, 5),
			sacctInfo{end: at(0, 10), state: "completed", code: code(0)}, false},
		{"job id given again", "77|2025-01-01T00:00:00|2025-01-01T01:00:00|COMPLETED|0:0\n77|2026-03-02T00:00:05|2026-03-02T00:10:00|FAILED|1:0\n", 0, at(0, 0),
			sacctInfo{end: at(0, 10), state: "failed", code: code(1)}, false},
		{"no run started near the prolog's start", "77|2026-03-02T05:00:00|Unknown|RUNNING|0:0\n", 0, at(0, 0), sacctInfo{}, true},
		{"no such job", "", 0, at(0, 0), sacctInfo{}, true},
		{"requeued without an end", "77|2026-03-02T00:00:00|Unknown|REQUEUED|0:0\n", 0, at(0, 0), sacctInfo{}, true},
		{"too few fields", "77|2026-03-02T00:00:00\n", 0, at(0, 0), sacctInfo{}, true},
		{"bad time", "77|yesterday|Unknown|RUNNING|0:0\n", 0, at(0, 0), sacctInfo{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runs, err := parseSacctRuns(tc.out, 77, time.UTC)
			var got sacctInfo
			if err == nil {
				got, err = runInfo(runs, tc.restart, tc.started)
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(sacctInfo{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
