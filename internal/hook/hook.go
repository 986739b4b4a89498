// Package hook is what prolog and epilog do: read the job from slurmd's
// environment, identify its GPUs, and spool one event, within a hard time
// bound, never failing the job because accounting failed. It asks the
// agent through internal/agentproto and links no NVML.
//
// The path: slurm.ParseEnv reads the job (a missing or garbage
// SLURM_JOB_ID ends the run, nothing can be keyed; any other defect is a
// quality flag). The config is read inside the bound (hooks.timeout starts
// before it); GPU work gets 60 % of the time left, each NVML call
// hooks.nvml_timeout. SLURM_JOB_GPUS holds gres.conf minors, matched
// against nvmlDeviceGetMinorNumber, never assumed to be indices. No driver,
// a hung one or a lost GPU leaves the minors recorded with a flag saying
// why. The event is linked into the spool: a second epilog finds the name
// taken and keeps the first record; a spool that cannot be written leaves
// the whole record in the log line. A watchdog in Exec exits 0 when the
// overall bound passes, whatever is still running.
//
//	main.go     Exec: config, logging, the hard time bound and the exit-0 rule around Run
//	hook.go     Run: job, GPUs (agent first, else hook-gpus), health check, event
//	direct.go   running hook-gpus beside the hook when no agent answers
//	runmark.go  the prolog's mark of the run it recorded, for a requeue's epilog
package hook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/agentproto"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurm"
	"github.com/aicloud/gpusuite/internal/spool"
)

// Deps is what a hook run takes from its surroundings.
type Deps struct {
	Getenv   func(string) string
	Now      func() time.Time
	Hostname func() (string, error)
	// AskGPUs answers for the job's GPUs when the agent does not; nil runs
	// Helper (direct.go), which opens NVML: the hooks themselves link none.
	AskGPUs func(ctx context.Context, req agentproto.Direct) (agentproto.Response, error)
	// Helper is the hook-gpus program; "" means the one beside the hook's
	// executable.
	Helper string
	// ProcRoot is /proc, for the health check's cgroup lookups and
	// the MIG caps' mig-minors.
	ProcRoot string
	// DevRoot is /dev, as gres.conf names the MIG caps; "" is /dev.
	DevRoot string
}

// Result is what one hook run did.
type Result struct {
	Event *record.Event
	// Unhealthy is set when the opt-in health check found a reason to
	// drain the node; only then does the hook exit non-zero.
	Unhealthy string
}

// Run performs one hook invocation of the given kind and returns what it
// recorded. Errors are returned for the caller to log; the caller exits 0
// on all of them.
func Run(ctx context.Context, kind record.Kind, cfg config.Config, d Deps, log *slog.Logger) (Result, error) {
	var res Result
	job, err := slurm.ParseEnv(d.Getenv)
	if err != nil {
		return res, fmt.Errorf("read job from environment: %w", err)
	}
	if len(job.Missing) > 0 || len(job.Problems) > 0 {
		log.Warn("incomplete job environment", "job", job.ID, "missing", strings.Join(job.Missing, ","), "problems", strings.Join(job.Problems, "; "))
	}
	ev := &record.Event{
		Schema: record.EventSchema, Kind: kind, Time: d.Now().UTC(),
		Source: string(sourceOf(kind)), Job: job.Job,
	}
	res.Event = ev
	ev.Cluster = firstNonEmpty(job.Cluster, cfg.Cluster.Name)
	ev.Node = job.Node
	if ev.Node == "" {
		ev.Node = cfg.Cluster.Node
	}
	if ev.Node == "" && d.Hostname != nil {
		if h, err := d.Hostname(); err == nil {
			ev.Node, _, _ = strings.Cut(h, ".")
		}
	}
	for _, m := range job.Missing {
		ev.Quality = append(ev.Quality, "env_missing: "+m)
	}
	for _, p := range job.Problems {
		ev.Quality = append(ev.Quality, "env_invalid: "+p)
	}
	if kind == record.JobEnd && job.Exit == nil {
		// absent, never 0: a job whose end is unknown did not succeed
		ev.Quality = append(ev.Quality, "exit_unknown: no valid SLURM_JOB_EXIT_CODE2 or SLURM_JOB_EXIT_CODE; exit recorded as absent")
	}
	// an epilog records the run its prolog marked (see runmark.go)
	marks := marksOf(cfg.Spool.Dir, d.Now)
	var marked []string
	if kind == record.JobEnd {
		ev.Job.RestartCount, marked = marks.runOf(ev.Cluster, job.ID, job.RestartCount, ev.Node)
		if ev.Job.RestartCount != job.RestartCount {
			log.Info("requeue counted before this epilog; recording the run its prolog noted", "job", job.ID,
				"restart_count", job.RestartCount, "run", ev.Job.RestartCount)
		}
	}
	ev.Key = record.EventKey(ev.Cluster, job.ID, ev.Job.RestartCount, ev.Node, kind)

	// GPU work gets at most 60% of the hook's time left (reading the config
	// may have used some), so that a hung driver still leaves time to write
	// what is known.
	budget := cfg.Hooks.Timeout.Duration
	if dl, ok := ctx.Deadline(); ok {
		budget = time.Until(dl)
	}
	gctx, cancel := context.WithTimeout(ctx, budget*6/10)
	// on a MIG node the gres ids lead to slices of parent GPUs (mig.go)
	minors := job.GPUs
	slices, merr := migSlices(d.Getenv, d.ProcRoot, d.DevRoot, ev.Node, job.GPUs)
	if merr != nil {
		log.Debug("no MIG mapping", "job", job.ID, "err", merr)
	}
	if slices != nil {
		minors = make([]int, len(slices))
		for i, s := range slices {
			minors[i] = s.Minor
		}
	}
	ev.GPUs = make([]record.GPU, len(minors))
	for i, m := range minors {
		ev.GPUs[i].Minor = m
	}
	health := kind == record.JobStart && cfg.Hooks.HealthCheck
	sock := cfg.Agent.SocketPath(cfg.Spool.Dir)
	// agentDown is set once the socket has failed: a down or hung agent must
	// cost the job's start path one timeout, not one per request.
	agentDown := false
	// expected is the connection of an identify not waited for, which
	// carries the event's announce too
	var expected *agentproto.Expected
	sliced := false // asSlices applied to ev.GPUs
	defer func() {
		if expected != nil {
			expected.Close()
		}
	}()
	if len(job.GPUs) > 0 {
		ans, exp, aerr := agentproto.Ask(gctx, sock, cfg.Agent.SocketTimeout.Duration, cfg.Agent.Interval.Duration, minors, health, ev.Key)
		expected = exp
		if aerr == nil {
			// the agent's NVML is already open: no nvmlInit on the job's
			// path, and the agent reads the energy counters itself (no
			// NVML call at all while the job waits)
			ev.GPUs, ev.Quality = ans.GPUs, withMissing(ans.GPUs, ev.Quality)
			// a slice's parent runs other jobs' slices: checked as slices
			ev.Quality, sliced = asSlices(ev.GPUs, slices, ev.Quality), true
			if err := exp.MIGUUIDs(sock, agentproto.InventoryMaxAge(cfg.Agent.Interval.Duration), ev.GPUs); err != nil {
				log.Warn("MIG UUIDs not read from the agent's inventory", "job", job.ID, "err", err)
			}
			if health {
				res.Unhealthy = healthCheck(gctx, ans.ProcsOf, d.ProcRoot, job.ID, ev.GPUs, log)
			}
		} else {
			agentDown = true
			req := agentproto.Direct{GPU: cfg.GPU, Node: ev.Node, Timeout: cfg.Hooks.NVMLTimeout, Minors: minors, Procs: health, MIG: migRefs(slices)}
			if dl, ok := gctx.Deadline(); ok {
				req.Deadline = dl.Add(-helperMargin)
			}
			ans, err := askGPUs(gctx, d, req)
			if err == nil && len(ans.GPUs) != len(minors) {
				err = errors.New(ans.Error) // NVML could not be opened
				if ans.Error == "" {
					err = fmt.Errorf("%d GPUs answered for %d minors", len(ans.GPUs), len(job.GPUs))
				}
			}
			if err != nil {
				log.Warn("NVML unavailable; recording device minors only", "job", job.ID, "err", err, "agent", aerr)
				ev.Quality = append(ev.Quality, "nvml_unavailable: "+err.Error())
			} else {
				log.Debug("agent unavailable; asked NVML directly", "job", job.ID, "agent", aerr)
				if ans.Error != "" {
					log.Warn("GPU identification failed", "job", job.ID, "err", ans.Error)
					ev.Quality = append(ev.Quality, "gpu_identity: "+ans.Error)
				}
				ev.GPUs, ev.Quality = ans.GPUs, withMissing(ans.GPUs, ev.Quality)
				ev.Quality, sliced = asSlices(ev.GPUs, slices, ev.Quality), true
				if health {
					res.Unhealthy = healthCheck(gctx, ans.ProcsOf, d.ProcRoot, job.ID, ev.GPUs, log)
				}
			}
		}
	}
	cancel()
	if !sliced { // NVML unavailable: the slices as the files gave them
		ev.Quality = asSlices(ev.GPUs, slices, ev.Quality)
	}

	data, err := json.Marshal(ev)
	if err != nil {
		return res, fmt.Errorf("encode event %s: %w", ev.Key, err)
	}
	dir := spool.Dir{Path: cfg.Spool.Dir}
	name := record.EventFileName(ev.Cluster, job.ID, ev.Job.RestartCount, ev.Node, kind)
	if err := dir.Ensure(); err != nil {
		return res, lost(ev, data, err)
	}
	// The prolog's mark is made beside the event's write, once the event
	// is ready to be written (a mark never names a run whose event the
	// prolog did not try to record), and neither waits for the other's
	// disk; the epilog's mark stays until its event is written.
	var marked1 chan error
	if kind == record.JobStart {
		marked1 = make(chan error, 1)
		go func() { marked1 <- marks.mark(ev.Cluster, job.ID, ev.Job.RestartCount, ev.Node) }()
	}
	werr := dir.Write(name, data)
	if marked1 != nil {
		if err := <-marked1; err != nil {
			log.Warn("run not noted; a requeue of this run may record its end under the next run", "job", job.ID, "err", err)
		}
	} else if werr == nil || errors.Is(werr, spool.ErrExists) {
		if err := marks.forget(marked); err != nil {
			log.Warn("run notes not cleared", "job", job.ID, "err", err)
		}
	}
	if err := werr; err != nil {
		if errors.Is(err, spool.ErrExists) {
			log.Info("event already recorded; keeping the first", "job", job.ID, "key", ev.Key)
			return res, nil
		}
		return res, lost(ev, data, err)
	}
	log.Debug("event recorded", "job", job.ID, "key", ev.Key, "gpus", len(ev.GPUs), "file", filepath.Join(dir.Path, name))
	if agentDown {
		return res, nil // the agent reads the spooled event when it is back
	}
	var aerr error
	if expected != nil {
		aerr = expected.Announce(ev)
	} else {
		aerr = agentproto.Announce(ctx, sock, cfg.Agent.SocketTimeout.Duration, ev)
	}
	if err := aerr; err != nil {
		log.Debug("agent not told; it reads the spooled event instead", "job", job.ID, "err", err)
	}
	return res, nil
}

// lost wraps a spool failure with the event itself, so the log line that
// reports the failure also carries the record for an admin to replay.
func lost(ev *record.Event, data []byte, err error) error {
	return fmt.Errorf("spool event %s (record follows so it can be replayed: %s): %w", ev.Key, data, err)
}

func askGPUs(ctx context.Context, d Deps, req agentproto.Direct) (agentproto.Response, error) {
	if d.AskGPUs != nil {
		return d.AskGPUs(ctx, req)
	}
	path := d.Helper
	if path == "" {
		var err error
		if path, err = helperPath(); err != nil {
			return agentproto.Response{}, err
		}
	}
	return askHelper(ctx, path, req)
}

// withMissing is quality with what each GPU could not give (invariant 6).
func withMissing(got []record.GPU, quality []string) []string {
	for _, g := range got {
		if len(g.Missing) > 0 {
			quality = append(quality, fmt.Sprintf("gpu_minor_%d: %s", g.Minor, strings.Join(g.Missing, "; ")))
		}
	}
	return quality
}

// healthCheck returns a reason when an allocated GPU runs a process that is
// not this job's.
func healthCheck(ctx context.Context, processes func(context.Context, string) ([]agentproto.Proc, error), procRoot string, jobID uint64, gpus []record.GPU, log *slog.Logger) string {
	for _, g := range gpus {
		if g.UUID == "" {
			continue
		}
		procs, err := processes(ctx, g.UUID)
		if err != nil && g.Parent != "" {
			// the agent lists whole GPUs' processes: a slice's are its
			// parent's, other jobs' slices' too, and are not checked
			log.Debug("health check: slice's processes not listed", "job", jobID, "gpu", g.UUID, "err", err)
			continue
		}
		if err != nil {
			log.Warn("health check: cannot list processes", "job", jobID, "gpu", g.UUID, "err", err)
			continue
		}
		for _, p := range procs {
			owner := slurm.JobOfPID(procRoot, int(p.PID))
			if owner != jobID {
				who := "a process outside any job"
				if owner != 0 {
					who = "job " + strconv.FormatUint(owner, 10)
				}
				return fmt.Sprintf("GPU %s (minor %d) still runs pid %d of %s", g.UUID, g.Minor, p.PID, who)
			}
		}
	}
	return ""
}

type source string

func sourceOf(k record.Kind) source {
	if k == record.JobEnd {
		return "epilog"
	}
	return "prolog"
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
