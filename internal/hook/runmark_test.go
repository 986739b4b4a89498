package hook

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/spool"
)

// hookRun is one prolog or epilog of TestEpilogRecordsItsPrologsRun.
type hookRun struct {
	kind    record.Kind
	job     string
	restart string // SLURM_JOB_RESTART_COUNT as slurmd hands it
	// age sets back the mtime of every mark present before this hook
	// runs, as if they had been left that long ago.
	age time.Duration
}

// On Slurm 22.05 a requeued run's epilog sees the next run's
// SLURM_JOB_RESTART_COUNT: the epilog records the run its prolog marked on
// this node, and today's count where no prolog marked one.
func TestEpilogRecordsItsPrologsRun(t *testing.T) {
	pro := func(job, rc string) hookRun { return hookRun{kind: record.JobStart, job: job, restart: rc} }
	epi := func(job, rc string) hookRun { return hookRun{kind: record.JobEnd, job: job, restart: rc} }
	tests := []struct {
		name string
		runs []hookRun
		want []string // the spooled events' keys, sorted
	}{
		{name: "requeue counted before the epilog",
			runs: []hookRun{pro("42", "0"), epi("42", "1"), pro("42", "1"), epi("42", "1")},
			want: []string{"testcl/42/0/gpu01/job_end", "testcl/42/0/gpu01/job_start", "testcl/42/1/gpu01/job_end", "testcl/42/1/gpu01/job_start"}},
		{name: "requeued twice",
			runs: []hookRun{pro("42", "0"), epi("42", "1"), pro("42", "1"), epi("42", "2"), pro("42", "2"), epi("42", "2")},
			want: []string{"testcl/42/0/gpu01/job_end", "testcl/42/0/gpu01/job_start", "testcl/42/1/gpu01/job_end", "testcl/42/1/gpu01/job_start",
				"testcl/42/2/gpu01/job_end", "testcl/42/2/gpu01/job_start"}},
		{name: "plain run", runs: []hookRun{pro("42", "0"), epi("42", "0")},
			want: []string{"testcl/42/0/gpu01/job_end", "testcl/42/0/gpu01/job_start"}},
		{name: "no prolog mark keeps the epilog's count", runs: []hookRun{epi("42", "1")},
			want: []string{"testcl/42/1/gpu01/job_end"}},
		{name: "another job's mark is ignored", runs: []hookRun{pro("41", "0"), epi("42", "1")},
			want: []string{"testcl/41/0/gpu01/job_start", "testcl/42/1/gpu01/job_end"}},
		{name: "a mark older than the marks' age is another job's under the same id",
			runs: []hookRun{pro("42", "0"), {kind: record.JobEnd, job: "42", restart: "1", age: runMarkMaxAge + time.Hour}},
			want: []string{"testcl/42/0/gpu01/job_start", "testcl/42/1/gpu01/job_end"}},
		{name: "a prolog run again renews its mark",
			runs: []hookRun{pro("42", "0"), {kind: record.JobStart, job: "42", restart: "0", age: runMarkMaxAge + time.Hour}, epi("42", "1")},
			want: []string{"testcl/42/0/gpu01/job_end", "testcl/42/0/gpu01/job_start"}},
		{name: "two jobs on the node",
			runs: []hookRun{pro("42", "0"), pro("43", "0"), epi("43", "1"), epi("42", "0")},
			want: []string{"testcl/42/0/gpu01/job_end", "testcl/42/0/gpu01/job_start", "testcl/43/0/gpu01/job_end", "testcl/43/0/gpu01/job_start"}},
		{name: "the run's own mark wins over an earlier run's left behind",
			// run 0's epilog never ran (its node died); run 1 ends normally
			runs: []hookRun{pro("42", "0"), pro("42", "1"), epi("42", "1")},
			want: []string{"testcl/42/0/gpu01/job_start", "testcl/42/1/gpu01/job_end", "testcl/42/1/gpu01/job_start"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := simConfig(t)
			var logs bytes.Buffer
			for i, r := range tt.runs {
				if r.age > 0 {
					ageMarks(t, cfg.Spool.Dir, r.age)
				}
				d := testDeps(envWith("SLURM_JOB_ID", r.job, "SLURM_JOB_RESTART_COUNT", r.restart))
				d.Now = time.Now // the marks' ages are the files' mtimes
				res, err := Run(context.Background(), r.kind, cfg, d, logger(&logs))
				if err != nil {
					t.Fatalf("hook %d (%s of job %s, restart count %s): %v", i, r.kind, r.job, r.restart, err)
				}
				if !strings.Contains(res.Event.Key, "/"+itoa(res.Event.Job.RestartCount)+"/") {
					t.Errorf("hook %d: key %s, job.restart_count %d", i, res.Event.Key, res.Event.Job.RestartCount)
				}
			}
			var got []string
			for _, ev := range readEvents(t, cfg.Spool.Dir) {
				got = append(got, ev.Key)
			}
			sort.Strings(got)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("events (-want +got):\n%s\nlog:\n%s", d, logs.String())
			}
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, "already recorded") && strings.Contains(l, "/job_end") {
					t.Errorf("an epilog found its end taken: %s", l)
				}
			}
		})
	}
}

// Each epilog removes the marks it used; the marks are not spool records,
// so nothing ships them.
func TestRunMarksClearedAndNotShipped(t *testing.T) {
	cfg := simConfig(t)
	run := func(kind record.Kind, job, rc string) {
		t.Helper()
		d := testDeps(envWith("SLURM_JOB_ID", job, "SLURM_JOB_RESTART_COUNT", rc))
		d.Now = time.Now
		if _, err := Run(context.Background(), kind, cfg, d, logger(discard())); err != nil {
			t.Fatal(err)
		}
	}
	run(record.JobStart, "42", "0")
	run(record.JobStart, "43", "0")
	if got, want := markNames(t, cfg.Spool.Dir), []string{"run.testcl.42.0.gpu01", "run.testcl.43.0.gpu01"}; !cmp.Equal(got, want) {
		t.Fatalf("marks after two prologs: %v, want %v", got, want)
	}
	names, err := spool.Dir{Path: cfg.Spool.Dir}.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if record.KindOfFile(n) != record.FileEvent {
			t.Errorf("the spool lists %q: the shipper would ship it", n)
		}
	}
	run(record.JobEnd, "42", "1")
	if got, want := markNames(t, cfg.Spool.Dir), []string{"run.testcl.43.0.gpu01"}; !cmp.Equal(got, want) {
		t.Errorf("marks after job 42's epilog: %v, want %v", got, want)
	}
}

// A mark whose epilog never ran is swept by a later epilog once it is
// older than runMarkMaxAge; younger marks (running jobs') stay.
func TestStaleRunMarksSwept(t *testing.T) {
	cfg := simConfig(t)
	marks := marksOf(cfg.Spool.Dir, time.Now)
	if err := os.MkdirAll(cfg.Spool.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := marks.mark("testcl", 7, 0, "gpu01"); err != nil {
		t.Fatal(err)
	}
	ageMarks(t, cfg.Spool.Dir, runMarkMaxAge+time.Minute)
	if err := marks.mark("testcl", 8, 0, "gpu01"); err != nil {
		t.Fatal(err)
	}
	d := testDeps(envWith("SLURM_JOB_ID", "9"))
	d.Now = time.Now
	if _, err := Run(context.Background(), record.JobEnd, cfg, d, logger(discard())); err != nil {
		t.Fatal(err)
	}
	if got, want := markNames(t, cfg.Spool.Dir), []string{"run.testcl.8.0.gpu01"}; !cmp.Equal(got, want) {
		t.Errorf("marks after the sweep: %v, want %v", got, want)
	}
}

// A prolog that cannot leave its mark still records its event.
func TestRunMarkUnwritable(t *testing.T) {
	cfg := simConfig(t)
	if err := os.MkdirAll(cfg.Spool.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg.Spool.Dir, RunMarksDir), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	if _, err := Run(context.Background(), record.JobStart, cfg, testDeps(envWith()), logger(&logs)); err != nil {
		t.Fatal(err)
	}
	if len(readEvents(t, cfg.Spool.Dir)) != 1 {
		t.Error("no event recorded")
	}
	if !strings.Contains(logs.String(), "run not noted") {
		t.Errorf("the missing mark is not logged:\n%s", logs.String())
	}
}

func markNames(t *testing.T, spoolDir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(spoolDir, RunMarksDir))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if e.Name() != runMarkSwept { // when the marks were last swept, not a mark
			names = append(names, e.Name())
		}
	}
	return names
}

func ageMarks(t *testing.T, spoolDir string, age time.Duration) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(spoolDir, RunMarksDir))
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-age)
	for _, e := range ents {
		if err := os.Chtimes(filepath.Join(spoolDir, RunMarksDir, e.Name()), old, old); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkRunMark is what the marks add to one prolog (mark) and its
// epilog (runOf, forget with its sweep of a node with 64 running jobs).
func BenchmarkRunMark(b *testing.B) {
	marks := marksOf(b.TempDir(), time.Now)
	for j := uint64(1000); j < 1064; j++ {
		if err := marks.mark("testcl", j, 0, "gpu01"); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := marks.mark("testcl", 42, 0, "gpu01"); err != nil {
			b.Fatal(err)
		}
		run, marked := marks.runOf("testcl", 42, 1, "gpu01")
		if run != 0 {
			b.Fatalf("run %d", run)
		}
		if err := marks.forget(marked); err != nil {
			b.Fatal(err)
		}
	}
}

// A mark's mtime is the hook's clock's: set by the open itself on the
// system's clock (an old mark of a reused job id too), by an update for a
// clock a second or more away.
func TestRunMarkMtime(t *testing.T) {
	for _, tt := range []struct {
		name   string
		offset time.Duration // of the hook's clock from the system's
		old    bool          // a mark 40 days old is there already
	}{
		{name: "system clock"},
		{name: "system clock, old mark of a reused id", old: true},
		{name: "clock behind", offset: -2 * time.Hour},
		{name: "clock ahead, old mark", offset: 3 * time.Hour, old: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spool := t.TempDir()
			now := func() time.Time { return time.Now().Add(tt.offset) }
			marks := marksOf(spool, now)
			path := filepath.Join(spool, RunMarksDir, marks.name("testcl", 7, 0, "gpu01"))
			if tt.old {
				if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				old := time.Now().Add(-40 * 24 * time.Hour)
				if err := os.Chtimes(path, old, old); err != nil {
					t.Fatal(err)
				}
			}
			want := now()
			if err := marks.mark("testcl", 7, 0, "gpu01"); err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if d := st.ModTime().Sub(want).Abs(); d > 2*time.Second {
				t.Errorf("mtime %s, want the hook's clock %s", st.ModTime(), want)
			}
			if !marks.fresh(marks.name("testcl", 7, 0, "gpu01")) {
				t.Error("the mark just made is not fresh")
			}
		})
	}
}

// An epilog sweeps at most once a day: a stale mark left after a sweep
// stays until the sweep's mark is a day old.
func TestRunMarksSweptDaily(t *testing.T) {
	spool := t.TempDir()
	marks := marksOf(spool, time.Now)
	for _, job := range []uint64{7, 8} {
		if err := marks.mark("testcl", job, 0, "gpu01"); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-runMarkMaxAge - time.Hour)
	age := func(name string, at time.Time) {
		if err := os.Chtimes(filepath.Join(spool, RunMarksDir, name), at, at); err != nil {
			t.Fatal(err)
		}
	}
	age(marks.name("testcl", 7, 0, "gpu01"), old)
	if err := marks.sweep(); err != nil { // the first: no mark yet
		t.Fatal(err)
	}
	if got, want := markNames(t, spool), []string{"run.testcl.8.0.gpu01"}; !cmp.Equal(got, want) {
		t.Fatalf("after the first sweep: %v, want %v", got, want)
	}
	age(marks.name("testcl", 8, 0, "gpu01"), old)
	if err := marks.sweep(); err != nil {
		t.Fatal(err)
	}
	if got, want := markNames(t, spool), []string{"run.testcl.8.0.gpu01"}; !cmp.Equal(got, want) {
		t.Errorf("a second sweep within the day removed %v", want)
	}
	age(runMarkSwept, time.Now().Add(-runMarkSweepEvery-time.Minute))
	if err := marks.sweep(); err != nil {
		t.Fatal(err)
	}
	if got := markNames(t, spool); len(got) != 0 {
		t.Errorf("a day later the stale mark is still there: %v", got)
	}
}
