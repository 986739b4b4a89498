package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim/gendata"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

type jobRow struct {
	End       int64
	Estimated bool
	Source    string
	State     string
	Alloc     int64
}

// TestUnfinishedJobs: a job without an end is closed from sacct when it
// answers, else at its last sample (flagged estimated); a later real end
// replaces the estimate, not Slurm's end.
func TestUnfinishedJobs(t *testing.T) {
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		sacct   Sacct
		want    jobRow // after the grace period
		wantArg string
	}{
		{"sacct answers", func(ctx context.Context, args ...string) ([]byte, error) {
			return []byte(args[3] + "|START|2026-03-02T02:30:00|COMPLETED|0:0\n"), nil
		}, jobRow{End: start.Unix() + 9000, Source: "sacct", State: "completed"}, "-j"},
		{"sacct says node failed", func(ctx context.Context, args ...string) ([]byte, error) {
			return []byte(args[3] + "|START|2026-03-02T02:30:00|NODE_FAIL|1:0\n"), nil
		}, jobRow{End: start.Unix() + 9000, Source: "sacct", State: "node_fail"}, "-j"},
		{"sacct fails", func(ctx context.Context, args ...string) ([]byte, error) {
			return nil, errors.New("slurmdbd unreachable")
		}, jobRow{Estimated: true, Source: "last_sample", State: "unknown"}, ""},
		{"no sacct", nil, jobRow{Estimated: true, Source: "last_sample", State: "unknown"}, ""},
		{"sacct says running", func(ctx context.Context, args ...string) ([]byte, error) {
			return []byte(args[3] + "|START|Unknown|RUNNING|0:0\n"), nil
		}, jobRow{End: -1, State: "running"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			truth, err := gendata.Generate(e.cfg.Ingest.Incoming, gendata.Options{Cluster: "c1", Nodes: 1, GPUsPerNode: 2, Start: start,
				Duration: 3 * time.Hour, Interval: 10 * time.Second, JobsPerNode: 6, Open: 1, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			// Keep the end events to ship later; generate them now. Its
			// truth counts the same samples cut at the real ends.
			ends := t.TempDir()
			ended, err := gendata.Generate(ends, gendata.Options{Cluster: "c1", Nodes: 1, GPUsPerNode: 2, Start: start,
				Duration: 3 * time.Hour, Interval: 10 * time.Second, JobsPerNode: 6, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			s := e.open(t)
			defer s.Close()
			var asked []string
			now := start.Add(3*time.Hour + e.cfg.Ingest.Grace.Duration + time.Minute)
			deps := Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid(), SacctLocation: time.UTC}
			if tc.sacct != nil {
				var phase reconcilePhase
				deps.Sacct = func(ctx context.Context, args ...string) ([]byte, error) {
					a := strings.Join(args, " ")
					if phase.reconciling(args) || strings.HasSuffix(a, "-o JobIDRaw,JobID,QOS,Comment") {
						return nil, nil // job details and times: TestPassFillsJobDetails, TestReconcile*
					}
					asked = append(asked, a)
					out, err := tc.sacct(ctx, args...)
					for _, j := range truth.JobList { // Slurm's start is the job's
						if args[3] == itoa(int(j.ID)) {
							out = bytes.ReplaceAll(out, []byte("START"), []byte(time.Unix(j.Start, 0).UTC().Format("2006-01-02T15:04:05")))
						}
					}
					return out, err
				}
			}
			if _, err := New(deps).Pass(context.Background()); err != nil {
				t.Fatal(err)
			}
			// Once a job; after a failed call the pass asks no more.
			wantAsked := truth.Jobs
			if tc.want.Source == "last_sample" {
				wantAsked = 1
			}
			if tc.sacct != nil && len(asked) != wantAsked {
				t.Errorf("sacct asked %d times for %d open jobs, want %d", len(asked), truth.Jobs, wantAsked)
			}
			if len(asked) > 0 && asked[0] != "-M c1 -j "+itoa(int(truth.JobList[0].ID))+" -X -D --parsable2 --noheader -o JobIDRaw,Start,End,State,ExitCode" {
				t.Errorf("sacct arguments %q", asked[0])
			}
			j := truth.JobList[0]
			got := job(t, s.Path, j.ID)
			want := tc.want
			switch {
			case want.End == -1:
				want.End = 0
			case want.Source == "last_sample":
				// last sample of the job: the last 10 s step before its end
				want.End = (j.End - 1) / 10 * 10
			}
			if want.End != 0 {
				want.Alloc = int64(len(j.GPUs)) * (want.End - j.Start)
			} else {
				want.Alloc = int64(len(j.GPUs)) * (now.Unix() - j.Start)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("after grace (-want +got):\n%s", diff)
			}
			// The real ends arrive: they replace every estimate, and no
			// end from sacct.
			for _, p := range mustGlob(t, filepath.Join(ends, "gpu001", "*job_end.json")) {
				data, _ := os.ReadFile(p)
				writeFile(t, filepath.Join(e.cfg.Ingest.Incoming, "gpu001", filepath.Base(p)), data)
			}
			if _, err := New(deps).Pass(context.Background()); err != nil {
				t.Fatal(err)
			}
			got = job(t, s.Path, j.ID)
			slurms := want.Source == "sacct"
			if !slurms {
				want = jobRow{End: j.End, Source: "epilog", State: "completed", Alloc: int64(len(j.GPUs)) * (j.End - j.Start)}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("after the real end (-want +got):\n%s", diff)
			}
			truth.AllocGPUS = 0
			for _, j := range truth.JobList {
				end := j.End
				if slurms { // Slurm's end stays (invariant 10)
					end = max(tc.want.End, j.Start)
				}
				truth.AllocGPUS += int64(len(j.GPUs)) * (end - j.Start)
			}
			truth.PerAccount = nil
			// The samples are counted again against the final ends.
			if slurms {
				truth.Used, truth.Idle, truth.SampleS, truth.EnergyMJ = cutUsage(t, s)
			} else {
				truth.Used, truth.Idle, truth.SampleS, truth.EnergyMJ = ended.Used, ended.Idle, ended.SampleS, ended.EnergyMJ
			}
			checkTruth(t, s, truth)
		})
	}
}

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil || len(m) == 0 {
		t.Fatalf("glob %s: %v (%d)", pattern, err, len(m))
	}
	return m
}

func job(t *testing.T, ledger string, id uint64) jobRow {
	t.Helper()
	var r jobRow
	var end *int64
	var src *string
	ledgerdb.Row(t, ledger, `SELECT end, end_estimated, end_source, state, alloc_gpu_s FROM jobs WHERE job_id = ?`, []any{int64(id)},
		&end, &r.Estimated, &src, &r.State, &r.Alloc)
	if end != nil {
		r.End = *end
	}
	if src != nil {
		r.Source = *src
	}
	return r
}

// TestServe: systemd readiness over NOTIFY_SOCKET, a file dropped in is
// ingested without waiting for the poll, /metrics counts it, SIGTERM-like
// cancellation stops cleanly with STOPPING=1.
func TestServe(t *testing.T) {
	e := newEnv(t)
	e.cfg.Ingest.Interval.Duration = time.Hour // only fsnotify can wake it
	e.cfg.Ingest.MetricsListen = "127.0.0.1:0"
	sock := filepath.Join(e.root, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// go-systemd's daemon helpers read the process environment.
	t.Setenv("NOTIFY_SOCKET", sock)
	t.Setenv("WATCHDOG_USEC", "200000")
	t.Setenv("WATCHDOG_PID", "")
	getenv := func(string) string { return "" }
	s := e.open(t)
	defer s.Close()
	reg := prometheus.NewRegistry()
	deps := Deps{Store: s, Config: e.cfg, Log: quiet(), UID: os.Getuid(), Metrics: NewMetrics(reg, time.Now)}
	srv := NewServer(New(deps), e.cfg, reg, quiet(), getenv)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- srv.Run(ctx) }()
	addr := <-srv.Addr
	msgs := make(chan string, 100)
	go func() {
		buf := make([]byte, 1024)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	waitFor := func(want string) {
		t.Helper()
		deadline := time.After(60 * time.Second)
		for {
			select {
			case m := <-msgs:
				if m == want {
					return
				}
			case <-deadline:
				t.Fatalf("no %q from the daemon", want)
			}
		}
	}
	waitFor("READY=1")
	waitFor("WATCHDOG=1")
	name, data := eventJSON(t, func(ev *record.Event) { ev.Time = time.Now().UTC().Add(-time.Minute) })
	dir := filepath.Join(e.cfg.Ingest.Incoming, "gpu001")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// No wait for the watcher to add the new directory: its creation
	// wakes a pass that runs after the watcher added it, so the file is
	// seen either by that pass or through its own event. Written under a
	// dot name and renamed, so that no pass sees it half written.
	tmp := filepath.Join(dir, "."+name)
	writeFile(t, tmp, data)
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	// The file's counters move when its batch commits; the lag and the
	// last success when the pass ends: wait for all of them.
	wants := []string{"gpuacct_ingest_files_total 1", "gpuacct_ingest_records_total 1", "gpuacct_ingest_lag_seconds{node=\"c1/gpu001\"}",
		"gpuacct_store_size_bytes", "gpuacct_ingest_last_success_timestamp_seconds", "gpuacct_ingest_quarantined_total 0", "gpuacct_ingest_refused_total 0"}
	missing := func(body []byte) (out []string) {
		for _, w := range wants {
			if !bytes.Contains(body, []byte(w)) {
				out = append(out, w)
			}
		}
		return out
	}
	deadline := time.After(60 * time.Second)
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	var body []byte
	for len(missing(body)) > 0 {
		select {
		case <-deadline:
			t.Fatalf("/metrics lacks %q within 60 s of the file arriving:\n%s", missing(body), body)
		case <-poll.C:
		}
		if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
			body = readAll(resp)
		}
	}
	cancel()
	waitFor("STOPPING=1")
	if err := <-stopped; err != nil {
		t.Errorf("serve returned %v", err)
	}
}

func readAll(resp *http.Response) []byte {
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return b.Bytes()
}

// TestSacctOncePerJob: a requeued job whose two runs are open past the
// grace period is one sacct call in a pass, not one per run: its runs
// answer for both.
func TestSacctOncePerJob(t *testing.T) {
	e := newEnv(t)
	s := e.open(t)
	defer s.Close()
	requeued := t0.Add(30 * time.Minute)
	e.put(t, evFile(t, "gpu001", 77, 0, record.JobStart, t0, 0), evFile(t, "gpu001", 77, 1, record.JobStart, requeued, 0))
	now := t0.Add(e.cfg.Ingest.Grace.Duration + time.Hour)
	var asked []string
	var phase reconcilePhase
	deps := Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid(), SacctLocation: time.UTC,
		Sacct: func(ctx context.Context, args ...string) ([]byte, error) {
			a := strings.Join(args, " ")
			if phase.reconciling(args) || strings.HasSuffix(a, "-o JobIDRaw,JobID,QOS,Comment") {
				return nil, nil // job details and times: TestPassFillsJobDetails, TestReconcile*
			}
			asked = append(asked, a)
			const ts = "2006-01-02T15:04:05"
			return []byte("77|" + t0.Format(ts) + "|" + requeued.Format(ts) + "|REQUEUED|0:0\n" +
				"77|" + requeued.Format(ts) + "|" + t0.Add(time.Hour).Format(ts) + "|COMPLETED|0:0\n"), nil
		}}
	res, err := New(deps).Pass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Closed != 2 {
		t.Errorf("closed %d runs, want 2", res.Closed)
	}
	want := []string{"-M c1 -j 77 -X -D --parsable2 --noheader -o JobIDRaw,Start,End,State,ExitCode"}
	if diff := cmp.Diff(want, asked); diff != "" {
		t.Errorf("sacct calls (-want +got):\n%s", diff)
	}
}

// TestSacctPerCluster: a job id names a different job on each cluster of
// a shared ledger, so unfinished jobs are asked about with -M, once per
// cluster and job id, and each is closed with its own cluster's answer.
func TestSacctPerCluster(t *testing.T) {
	e := newEnv(t)
	s := e.open(t)
	defer s.Close()
	e.put(t, evFileIn(t, "ca", "g01", 300, record.JobStart, t0), evFileIn(t, "cb", "g02", 300, record.JobStart, t0))
	ends := map[string]time.Time{"ca": t0.Add(10 * time.Minute), "cb": t0.Add(20 * time.Minute)}
	now := t0.Add(e.cfg.Ingest.Grace.Duration + time.Hour)
	var asked []string
	var phase reconcilePhase
	deps := Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid(), SacctLocation: time.UTC,
		Sacct: func(ctx context.Context, args ...string) ([]byte, error) {
			if phase.reconciling(args) || !runsCall(args) {
				return nil, nil // job details and times: TestPassFillsJobDetails, TestReconcile*
			}
			asked = append(asked, strings.Join(args[:4], " "))
			if args[0] != "-M" {
				return nil, nil
			}
			return []byte("300|" + t0.Format(sacctTS) + "|" + ends[args[1]].Format(sacctTS) + "|COMPLETED|0:0\n"), nil
		}}
	if _, err := New(deps).Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"-M ca -j 300", "-M cb -j 300"}, asked); diff != "" {
		t.Errorf("sacct calls (-want +got):\n%s", diff)
	}
	got := ledgerdb.Strings(t, s.Path, `SELECT cluster || ' ' || end || ' ' || end_source FROM jobs ORDER BY cluster`)
	want := []string{fmt.Sprintf("ca %d sacct", ends["ca"].Unix()), fmt.Sprintf("cb %d sacct", ends["cb"].Unix())}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("jobs (-want +got):\n%s", diff)
	}
}

// TestDetailsPerCluster: job comments are asked of each job's own cluster
// (-M), so that job 300 of cluster cb does not take cluster ca's job 300's
// comment in a ledger both report to.
func TestDetailsPerCluster(t *testing.T) {
	e := newEnv(t)
	s := e.open(t)
	defer s.Close()
	e.put(t, evFileIn(t, "ca", "g01", 300, record.JobStart, t0), evFileIn(t, "cb", "g02", 300, record.JobStart, t0))
	now := t0.Add(time.Hour)
	comments := map[string]string{"ca": "from ca", "cb": "from cb"}
	var asked []string
	deps := Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid(), SacctLocation: time.UTC,
		Sacct: func(ctx context.Context, args ...string) ([]byte, error) {
			if !strings.Contains(strings.Join(args, " "), "-o JobIDRaw,JobID,QOS,Comment") {
				return nil, nil // times and runs: TestSacctPerCluster, TestReconcile*
			}
			asked = append(asked, strings.Join(args[:4], " "))
			if args[0] != "-M" {
				return []byte("300|300|normal|from the local cluster\n"), nil
			}
			return []byte("300|300|normal|" + comments[args[1]] + "\n"), nil
		}}
	if _, err := New(deps).Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"-M ca -j 300", "-M cb -j 300"}, asked); diff != "" {
		t.Errorf("sacct calls (-want +got):\n%s", diff)
	}
	got := ledgerdb.Strings(t, s.Path, `SELECT cluster || ' ' || coalesce(comment, '') FROM jobs ORDER BY cluster`)
	if diff := cmp.Diff([]string{"ca from ca", "cb from cb"}, got); diff != "" {
		t.Errorf("comments (-want +got):\n%s", diff)
	}
}
