package slurm_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/aicloud/gpusuite/internal/testkit/slurm"
)

// sacctJob is a job submitted for the comparison with Slurm's accounting.
type sacctJob struct {
	name string
	user string // "" is root
	args []string
	// cancel: scancel once it has run a while.
	cancel bool
	// withhold: its epilog event does not reach the ledger of the
	// unfinished-jobs test, as when a node dies before shipping it.
	withhold bool
}

// exported is a job as `gpuacct export jobs --format jsonl` gives it.
type exported struct {
	JobID        uint64 `json:"job_id"`
	User         string `json:"user"`
	Account      string `json:"account"`
	GPUs         int    `json:"gpus"`
	Start        int64  `json:"start"`
	End          *int64 `json:"end"`
	State        string `json:"state"`
	EndEstimated int    `json:"end_estimated"`
	AllocGPUS    int64  `json:"alloc_gpu_s"`
}

// TestSacct runs real jobs, takes what the real prolog and epilog spooled
// through the real ingest into a fresh ledger, and compares the ledger
// with what Slurm's own accounting (slurmdbd, through sacct) says of the
// same jobs.
func TestSacct(t *testing.T) {
	c := slurm.Get(t)
	slurm.EnsureUser(t, "alice")
	slurm.EnsureUser(t, "bob")
	gpuacct := slurm.Binary(t, "gpuacct")

	jobs := []sacctJob{
		// First, so it starts at once and the others queue behind it.
		{name: "cancelled while running", user: "bob", args: []string{"-A", "team-b", "--gres=gpu:1", "--wrap", "sleep 300"}, cancel: true, withhold: true},
		{name: "one GPU", user: "alice", args: []string{"-A", "team-a", "--gres=gpu:1", "--wrap", "sleep 2"}},
		{name: "two GPUs", user: "bob", args: []string{"-A", "team-b", "--gres=gpu:2", "--wrap", "sleep 3"}, withhold: true},
		{name: "four GPUs", user: "alice", args: []string{"-A", "team-a", "--gres=gpu:4", "--wrap", "sleep 2"}},
		{name: "failing", user: "alice", args: []string{"-A", "team-a", "--gres=gpu:1", "--wrap", "sleep 1; exit 3"}, withhold: true},
		{name: "no GPU", user: "bob", args: []string{"-A", "team-b", "--wrap", "sleep 1"}},
		{name: "array", user: "alice", args: []string{"-A", "team-a", "--gres=gpu:1", "--array=0-2", "--wrap", "sleep 1"}},
		// With accounting on, a job without -A is charged to the user's
		// default account (root's is root).
		{name: "root without account", args: []string{"--gres=gpu:1", "--wrap", "sleep 1"}},
	}
	ids := make([]uint64, len(jobs))
	for i, j := range jobs {
		ids[i] = c.Sbatch(t, j.user, j.args...)
	}
	for i, j := range jobs {
		if j.cancel {
			c.WaitState(t, ids[i], "RUNNING", 60*time.Second)
			// Cancel once the prolog has recorded the start on the node,
			// so that the cancelled job has a start to close.
			waitEvent(t, c, ids[i], record.JobStart, 60*time.Second)
			c.Run(t, "", "scancel", strconv.FormatUint(ids[i], 10))
		}
	}
	// The array's three tasks are three rows.
	rows := c.WaitAccounted(t, 3*time.Minute, len(jobs)+2, ids...)
	// name of the job each sacct row (an array task too) belongs to
	nameOf := map[uint64]string{}
	withheld := map[uint64]bool{}
	for _, r := range rows {
		for i, j := range jobs {
			if r.JobIDRaw == ids[i] || strings.HasPrefix(r.JobID, strconv.FormatUint(ids[i], 10)+"_") {
				nameOf[r.JobIDRaw] = j.name
				withheld[r.JobIDRaw] = j.withhold
			}
		}
		// The epilog runs after Slurm has ended the job: wait for both events.
		waitEvent(t, c, r.JobIDRaw, record.JobStart, 60*time.Second)
		waitEvent(t, c, r.JobIDRaw, record.JobEnd, 60*time.Second)
	}
	if len(rows) != len(jobs)+2 {
		t.Fatalf("sacct has %d rows for %d jobs (an array of 3): %+v", len(rows), len(jobs), rows)
	}

	t.Run("allocated GPU-seconds", func(t *testing.T) {
		// Every event is there: no job may need sacct, so ingest here
		// never asks it, and an end it had to estimate fails below.
		l := newLedger(t, gpuacct, c, rows, nil, "")
		got := l.export(t)
		for _, r := range rows {
			t.Run(fmt.Sprintf("%s %s", nameOf[r.JobIDRaw], r.JobID), func(t *testing.T) {
				g, ok := got[r.JobIDRaw]
				if !ok {
					t.Fatalf("job %d is not in the ledger", r.JobIDRaw)
				}
				if g.End == nil || g.EndEstimated != 0 {
					t.Fatalf("job %d: end %v, estimated %d: want its epilog's end", r.JobIDRaw, g.End, g.EndEstimated)
				}
				elapsed := *g.End - g.Start
				t.Logf("sacct %d GPUs × %d s = %d GPU-s; ledger %d GPUs × %d s = %d GPU-s",
					r.GPUs, r.ElapsedRaw, r.GPUSeconds(), g.GPUs, elapsed, g.AllocGPUS)
				type who struct {
					User, Account string
					GPUs          int
				}
				if diff := cmp.Diff(who{r.User, r.Account, r.GPUs}, who{g.User, g.Account, g.GPUs}); diff != "" {
					t.Errorf("sacct vs ledger (-sacct +ledger):\n%s", diff)
				}
				if g.AllocGPUS != int64(g.GPUs)*elapsed {
					t.Errorf("ledger: %d GPU-s for %d GPUs × %d s", g.AllocGPUS, g.GPUs, elapsed)
				}
				// Within 2 s of the job's elapsed time: the hooks run a
				// moment after Slurm's start and end, and both sides keep
				// whole seconds. In GPU-seconds that is 2 s per GPU.
				if d := g.AllocGPUS - r.GPUSeconds(); abs(d) > 2*int64(r.GPUs) || abs(elapsed-r.ElapsedRaw) > 2 {
					t.Errorf("ledger %d GPU-s over %d s, sacct %d GPU-s over %d s: off by %d GPU-s",
						g.AllocGPUS, elapsed, r.GPUSeconds(), r.ElapsedRaw, d)
				}
			})
		}
	})

	t.Run("unfinished jobs closed from sacct", func(t *testing.T) {
		l := newLedger(t, gpuacct, c, rows, withheld, "sacct")
		got := l.export(t)
		st, err := store.Open(context.Background(), store.Options{Path: l.db, ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		n := 0
		for _, r := range rows {
			g, ok := got[r.JobIDRaw]
			if !ok {
				t.Errorf("job %d is not in the ledger", r.JobIDRaw)
				continue
			}
			var source string
			var code *int
			ledgerdb.Row(t, st.Path, `SELECT coalesce(end_source, ''), exit_code FROM jobs WHERE cluster = 'testcl' AND job_id = ?`,
				[]any{int64(r.JobIDRaw)}, &source, &code)
			if !withheld[r.JobIDRaw] {
				if source != "sacct" {
					t.Errorf("job %d (%s) kept its epilog event, so sacct reconciled it, but its end came from %q", r.JobIDRaw, nameOf[r.JobIDRaw], source)
				}
				continue
			}
			n++
			t.Logf("%s %s: sacct end %d %s %s; ledger end %v %s (from %s) exit %v, %d GPU-s", nameOf[r.JobIDRaw], r.JobID,
				r.End.Unix(), r.State, r.ExitCode, deref(g.End), g.State, source, deref(code), g.AllocGPUS)
			type closed struct {
				End       int64
				Estimated int
				Source    string
				State     string
				Exit      int
				AllocGPUS int64
			}
			exit, _, _ := strings.Cut(r.ExitCode, ":")
			wantExit, err := strconv.Atoi(exit)
			if err != nil {
				t.Fatalf("sacct exit code %q", r.ExitCode)
			}
			want := closed{End: r.End.Unix(), Source: "sacct", State: strings.ToLower(r.State), Exit: wantExit,
				AllocGPUS: int64(r.GPUs) * (r.End.Unix() - g.Start)}
			gotc := closed{Estimated: g.EndEstimated, Source: source, State: g.State, AllocGPUS: g.AllocGPUS, Exit: -1}
			if g.End != nil {
				gotc.End = *g.End
			}
			if code != nil {
				gotc.Exit = *code
			}
			if diff := cmp.Diff(want, gotc); diff != "" {
				t.Errorf("job %d (%s) without its epilog event (-want +got):\n%s", r.JobIDRaw, nameOf[r.JobIDRaw], diff)
			}
		}
		if n != 3 {
			t.Errorf("%d jobs were withheld, want 3", n)
		}
	})
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// newLedger is a ledger of the jobs' events from the harness's spool,
// leaving out the job_end events of withhold, after one ingest pass with
// sacct as the sacct program ("" never asks); it fails the test when the
// pass quarantines or leaves any file.
func newLedger(t *testing.T, gpuacct string, c *slurm.Cluster, rows []slurm.Accounted, withhold map[uint64]bool, sacct string) *ledger {
	t.Helper()
	node, spool := c.Path("GPUSUITE_SLURM_NODE"), c.Path("GPUSUITE_SLURM_SPOOL")
	var files []string
	for _, r := range rows {
		for _, kind := range []record.Kind{record.JobStart, record.JobEnd} {
			if kind == record.JobEnd && withhold[r.JobIDRaw] {
				continue
			}
			files = append(files, filepath.Join(spool, record.EventFileName("testcl", r.JobIDRaw, 0, node, kind)))
		}
	}
	in := ingestLedger(t, gpuacct, c, files, ledgerConfig{Ingest: fmt.Sprintf("sacct = %q\n", sacct)})
	if len(in.Quarantined) > 0 {
		t.Fatalf("ingest quarantined or refused %v\n%s", in.Quarantined, in.Log)
	}
	if in.Left > 0 {
		t.Fatalf("ingest left %d files in incoming\n%s", in.Left, in.Log)
	}
	return in.ledger
}

// export reads the ledger's jobs back through the report layer.
func (l *ledger) export(t *testing.T) map[uint64]exported {
	t.Helper()
	out, _ := l.run(t, "export", "jobs", "--format", "jsonl", "--start", "now-1days")
	got := map[uint64]exported{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var e exported
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		got[e.JobID] = e
	}
	return got
}
