package demo

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/table"
	rteams "github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/sim/simcluster"
	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/store"
)

// The simulated nodes' agent.segment_duration and agent.ship_interval.
// Production's 5 min and 30 s would have each node spool, ship and
// ingest thousands of small files in a fortnight simulated in seconds;
// a segment still closes at every job's start and end.
const (
	demoSegment = 6 * time.Hour
	demoShip    = time.Hour
)

// PipelineOptions size the simulated cluster.
type PipelineOptions struct {
	// Dir receives the database and the plots.
	Dir string
	// ClusterDir holds the simulated nodes' local disks (spool, agent
	// state) and the share they ship to (incoming/); default Dir/cluster.
	ClusterDir string
	// WorkRoot is where Run makes ClusterDir, a directory of its own that
	// it removes at the end; default /dev/shm when there is one, else
	// ClusterDir's default. Pipeline does not read it.
	WorkRoot string
	Nodes    int
	GPUs     int
	Weeks    int
	// Interval is the agents' sampling interval.
	Interval time.Duration
	// JobsPerDay is about how many jobs a node runs a day.
	JobsPerDay int
	Seed       int64
	Width      int
	// Start is when the simulated weeks begin; zero: Weeks before the
	// hour of Now, so that they end as the demo runs and every default
	// window (the reports' last 7 days, the dashboard, gpuacct check)
	// holds data.
	Start time.Time
	// Program is the path of the running gpuacct, for the serve command
	// the demo prints; "" prints gpuacct.
	Program string
	// Now is the real clock: the simulated weeks end by it (when Start is
	// zero), and ingest, the booking and the live snapshots are dated by
	// it. nil: time.Now.
	Now func() time.Time
}

// Outcome is what a demo run found, for tests.
type Outcome struct {
	Truth simcluster.Truth
	DB    string
	// Worst is the job whose detail was shown.
	Worst uint64
	Plots []string
	// Ledger is the cluster total the report queries read back.
	Ledger report.Usage
	// LiveDir holds the nodes' live snapshots.
	LiveDir string
}

// Pipeline runs the accounting pipeline end to end on simulated weeks: a
// simulated cluster whose nodes run the real agent and the real
// prolog/epilog code ships its records, one real ingest pass takes them
// into a fresh database under Dir, and then the weekly team report, the
// detail of the least efficient job and two plot files.
func Pipeline(ctx context.Context, w io.Writer, o PipelineOptions) (Outcome, error) {
	var out Outcome
	dur := time.Duration(o.Weeks) * 7 * 24 * time.Hour
	if o.Now == nil {
		o.Now = time.Now
	}
	// The weeks end on the hour, as reports round their windows to
	// hours (sreport's rule): the one printed is the one read. The live
	// step's records bring every node up to now.
	if o.Start.IsZero() {
		o.Start = o.Now().UTC().Truncate(time.Hour).Add(-dur)
	}
	// Weeks that end in the future would meet the live nodes, which run
	// now, on the same GPUs.
	if end := o.Start.Add(dur); end.After(o.Now()) {
		return out, fmt.Errorf("demo: --start %s: the %d simulated week(s) would end at %s, after now; start them earlier",
			o.Start.UTC().Format(time.RFC3339), o.Weeks, end.UTC().Format(time.RFC3339))
	}
	if o.ClusterDir == "" {
		o.ClusterDir = filepath.Join(o.Dir, "cluster")
	}
	cfg := ingestConfig(o.Dir, filepath.Join(o.ClusterDir, "incoming"), "demo", o.Interval)
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return out, fmt.Errorf("demo: %w", err)
	}
	for _, d := range []string{o.Dir, o.ClusterDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return out, fmt.Errorf("demo: %w", err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			return out, fmt.Errorf("demo: %w", err)
		}
	}
	so := simcluster.Options{Cluster: "demo", Nodes: o.Nodes, GPUsPerNode: o.GPUs, Model: "h100", Start: o.Start, Duration: dur,
		Interval: o.Interval, Segment: max(demoSegment, o.Interval), Ship: max(demoShip, o.Interval), JobsPerNode: o.JobsPerDay * 7 * o.Weeks, FaultEvery: 72 * time.Hour,
		Seed: o.Seed, NodeRoot: filepath.Join(o.ClusterDir, "nodes"), Incoming: cfg.Ingest.Incoming}
	sim, err := simcluster.Run(ctx, so)
	if err != nil {
		return out, fmt.Errorf("demo: simulate: %w", err)
	}
	truth := sim.Truth
	out.Truth, out.DB = truth, cfg.Store.Path
	kinds := map[simcluster.Kind]int{}
	users, teams := map[string]bool{}, map[string]bool{}
	for _, j := range truth.Jobs {
		kinds[j.Kind]++
		users[j.User] = true
		teams[j.Account] = true
	}
	fmt.Fprintf(w, "Simulated %d week(s) of cluster %q: %d nodes × %d %s GPUs, %d users in %d teams, %d jobs (%d busy, %d barely using their GPUs, %d idle, %d failing).\n",
		o.Weeks, truth.Cluster, o.Nodes, o.GPUs, strings.ToUpper(so.Model), len(users), len(teams), len(truth.Jobs),
		kinds[simcluster.Busy], kinds[simcluster.Low], kinds[simcluster.Idle], kinds[simcluster.Failing])
	fmt.Fprintf(w, "On every node the real gpuacct agent sampled each GPU every %s and the real prolog/epilog recorded each job;\n",
		strings.TrimSuffix(strings.TrimSuffix(o.Interval.String(), "0s"), "0m"))
	fmt.Fprintf(w, "GPUs were lost for %d samples and %d energy counters were reset on the way. The agents shipped %d files to\n%s/<node>/.\n\n",
		truth.LostSamples, truth.Resets, sim.Shipped, cfg.Ingest.Incoming)

	// Ingest runs as the simulated weeks end, or after them.
	now := func() time.Time {
		if t := o.Now(); t.After(truth.End) {
			return t
		}
		return truth.End
	}
	info := Info{Cluster: truth.Cluster, Nodes: o.Nodes, GPUs: o.GPUs, Model: "h100", Seed: o.Seed, NextJob: 1, Start: truth.Start}
	st, err := store.Open(ctx, store.Options{Path: cfg.Store.Path})
	if err != nil {
		return out, fmt.Errorf("demo: %w", err)
	}
	res, err := ingester(st, cfg, info, truth.Start, now, nil).Pass(ctx)
	st.Close()
	if err != nil {
		return out, fmt.Errorf("demo: ingest: %w", err)
	}
	fmt.Fprintf(w, "$ gpuacct ingest --incoming %s --db %s\n", cfg.Ingest.Incoming, cfg.Store.Path)
	fmt.Fprintf(w, "files %d, records %d (new samples %d), duplicates %d, quarantined %d, refused %d\n\n",
		res.Files, res.Records, res.Samples, res.Duplicates, res.Quarantined, res.Refused)

	db, err := report.OpenDB(ctx, cfg.Store.Path, time.Second)
	if err != nil {
		return out, err
	}
	defer db.Close()
	win := timespec.Window{Start: truth.Start, End: truth.End}
	if out.Ledger, err = total(ctx, db, win); err != nil {
		return out, err
	}
	verdict := "equal to"
	if !sameTotals(out.Ledger, truth.Total) {
		verdict = "DIFFERENT FROM"
	}
	fmt.Fprintf(w, "Ledger: %.1f GPU-hours allocated, %.1f used, %.1f idle, %.2f kWh, %d jobs: %s the simulation's ground truth.\n\n",
		float64(out.Ledger.AllocS)/3600, out.Ledger.UsedS/3600, out.Ledger.IdleS/3600, float64(out.Ledger.EnergyMJ)/3.6e9, out.Ledger.Jobs, verdict)

	fmt.Fprintf(w, "$ gpuacct report teams --period week --start %s --end %s --tz UTC --db %s\n\n",
		stamp(win.Start), stamp(win.End), cfg.Store.Path)
	t, err := db.Report(ctx, report.Request{Kind: "teams", Window: win, Period: timespec.Week, Mapping: &rteams.Mapping{}})
	if err != nil {
		return out, err
	}
	if err := table.Write(w, t, table.Options{Width: o.Width}); err != nil {
		return out, err
	}
	// The least efficient finished multi-GPU job is the one worth a look.
	var worst *report.JobRow
	err = db.Jobs(ctx, report.JobsQuery{Window: win, Sort: "eff", Now: now()}, func(j *report.JobRow) bool {
		if j.SampleS > 0 && j.End != nil && j.GPUs > 1 && *j.End-j.Start >= 3600 {
			worst = j
			return false
		}
		return true
	})
	if err != nil {
		return out, err
	}
	if worst == nil {
		return out, fmt.Errorf("demo: no finished multi-GPU job of an hour or more with samples")
	}
	out.Worst = uint64(worst.JobID)
	det, err := db.Job(ctx, worst.Cluster, report.JobSpec{ID: worst.JobID, Restart: worst.Restart}, now())
	if err != nil {
		return out, err
	}
	fmt.Fprintf(w, "\nThe least efficient finished job on more than one GPU (gpuacct report jobs --sort eff):\n\n$ gpuacct job %s --tz UTC --db %s\n\n", worst.ID(), cfg.Store.Path)
	if err := report.WriteJobText(w, det, &rteams.Mapping{}, time.UTC, max(o.Width, 100)); err != nil {
		return out, err
	}
	png := filepath.Join(o.Dir, fmt.Sprintf("job-%d.png", worst.JobID))
	if err := report.PlotJob(det, png, time.UTC); err != nil {
		return out, err
	}
	teamsPNG := filepath.Join(o.Dir, "teams-per-week.png")
	if err := db.PlotReport(ctx, report.Request{Window: win, Period: timespec.Week, Mapping: &rteams.Mapping{}}, teamsPNG); err != nil {
		return out, err
	}
	out.Plots = []string{png, teamsPNG}
	fmt.Fprintf(w, "\n$ gpuacct plot %s -o %s --db %s\n", worst.ID(), png, cfg.Store.Path)
	fmt.Fprintf(w, "$ gpuacct plot --report --period week --start %s --end %s --tz UTC -o %s --db %s\n",
		stamp(win.Start), stamp(win.End), teamsPNG, cfg.Store.Path)
	fmt.Fprintf(w, "Plots: %s\n       %s\n", png, teamsPNG)
	if out.LiveDir, err = leaveLive(ctx, w, o, truth, info); err != nil {
		return out, err
	}
	return out, nil
}

// liveWait bounds how long the nodes may take to write their first
// snapshots.
const liveWait = time.Minute

// leaveInterval is the agents' interval while they leave their snapshots.
const leaveInterval = 200 * time.Millisecond

// leaveLive books a GPU in the ledger, describes the directory for
// `gpuacct demo serve`, brings the nodes to life for one sample cycle so
// that Dir/live holds their snapshots, ends the jobs it started there,
// ingests what the nodes shipped (so that every job on the snapshots is
// in the ledger), and prints the command that serves the board.
func leaveLive(ctx context.Context, w io.Writer, o PipelineOptions, truth simcluster.Truth, in Info) (string, error) {
	for _, j := range truth.Jobs {
		in.NextJob = max(in.NextJob, j.ID+1)
	}
	cfg := ingestConfig(o.Dir, filepath.Join(o.ClusterDir, "live", "incoming"), in.Cluster, LiveInterval)
	st, err := store.Open(ctx, store.Options{Path: cfg.Store.Path})
	if err != nil {
		return "", fmt.Errorf("demo: %w", err)
	}
	defer st.Close()
	if err := addBooking(ctx, st, in, o.Now()); err != nil {
		return "", err
	}
	if err := writeInfo(o.Dir, in); err != nil {
		return "", fmt.Errorf("demo: %w", err)
	}
	liveDir := filepath.Join(o.Dir, LiveDirName)
	unlock, err := lockLive(liveDir)
	if err != nil {
		return "", err
	}
	defer unlock()
	// One snapshot a node is all this needs: a short interval gets it in a
	// fraction of a second (`demo serve` runs the agents at LiveInterval).
	live, err := NewLive(LiveOptions{Info: in, LiveDir: liveDir, WorkDir: filepath.Join(o.ClusterDir, "live"), Now: o.Now, Interval: leaveInterval})
	if err != nil {
		return "", err
	}
	lctx, cancel := context.WithTimeout(ctx, liveWait)
	defer cancel()
	wrote := false
	// Slurm's view of the moment the snapshots show goes to its file
	// before Run ends their jobs.
	var viewErr error
	if err := live.Run(lctx, func() { wrote = true; viewErr = slurmstate.WriteFile(SlurmFile(o.Dir), live.view()); cancel() }); err != nil {
		return "", err
	}
	if !wrote {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		return "", fmt.Errorf("demo: the live nodes wrote no snapshot into %s in %s", liveDir, liveWait)
	}
	in.LiveUntil = time.Now()
	if err := writeInfo(o.Dir, in); err != nil {
		return "", fmt.Errorf("demo: %w", err)
	}
	if viewErr != nil {
		return "", fmt.Errorf("demo: the simulated Slurm's view was not written: %w", viewErr)
	}
	if _, err := ingester(st, cfg, in, in.Start, o.Now, nil).Pass(ctx); err != nil {
		return "", fmt.Errorf("demo: ingest the live nodes' records: %w", err)
	}
	prog := o.Program
	if prog == "" {
		prog = "gpuacct"
	}
	dir := o.Dir
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs // the command runs from any directory
	}
	fmt.Fprintf(w, "\nThe live board: the nodes' agents left their snapshots in %s, and a GPU is booked.\n"+
		"To watch the cluster live (jobs start and end every half minute), run\n\n    %s demo serve --dir %s\n\nthen open http://%s/\n\n"+
		"While it runs, the same free GPUs in a terminal:\n\n    %s free %s\n    %s status %s\n",
		liveDir, prog, dir, DefaultListen, prog, CLIFlags(dir), prog, CLIFlags(dir))
	return liveDir, nil
}

// CLIFlags are the flags that point gpuacct free and status at the demo
// in dir: its snapshots, its ledger's notes and its simulated Slurm.
func CLIFlags(dir string) string {
	return fmt.Sprintf("--live-dir %s --db %s --slurm-file %s", filepath.Join(dir, LiveDirName), filepath.Join(dir, dbFile), SlurmFile(dir))
}

// stamp is t as --start and --end take it: to the minute, or the second
// when it has one.
func stamp(t time.Time) string {
	if t.Second() != 0 {
		return t.Format("2006-01-02T15:04:05")
	}
	return t.Format("2006-01-02T15:04")
}

// total is the cluster's usage in the window as the reports read it.
func total(ctx context.Context, db *report.Ledger, win timespec.Window) (report.Usage, error) {
	var u report.Usage
	err := db.Facts(ctx, timespec.Buckets(report.HourWindow(win), timespec.None), report.Filter{}, false, func(f *report.Fact) { u.Add(f.Usage) })
	return u, err
}

// sameTotals holds the ledger to the truth: integer sums exactly, used
// GPU-seconds to 10⁻⁹ (float sums added in another order).
func sameTotals(l report.Usage, t simcluster.Usage) bool {
	return l.AllocS == t.AllocS && l.Jobs == t.Jobs && l.SampleS == t.SampleS && l.IdleS == t.IdleS && l.EnergyMJ == t.EnergyMJ &&
		math.Abs(l.UsedS-t.UsedS) <= 1e-9*math.Max(1, t.UsedS)
}
