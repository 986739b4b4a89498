package pg_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/sim/gendata"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/aicloud/gpusuite/internal/testkit/poll"
	"github.com/aicloud/gpusuite/internal/testkit/slurm"
)

// envStandby is the URL of the harness's streaming standby of
// GPUSUITE_TEST_PG's server (test/pg/harness.sh).
const envStandby = "GPUSUITE_TEST_PG_STANDBY"

// onStandby is the test database at primary as the standby serves it.
func onStandby(t *testing.T, primary string) string {
	t.Helper()
	s := os.Getenv(envStandby)
	if s == "" {
		t.Fatalf("%s is not set: test/pg/harness.sh start makes the standby and writes it to its env file", envStandby)
	}
	su, err := url.Parse(s)
	if err != nil {
		t.Fatalf("%s %q: %v", envStandby, s, err)
	}
	pu, err := url.Parse(primary)
	if err != nil {
		t.Fatal(err)
	}
	su.Path = pu.Path
	return su.String()
}

// get is one bounded request to a serve.
func get(addr, path string) (int, []byte, error) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return resp.StatusCode, b, err
}

// gpuacct runs a gpuacct command on cfg and returns its stdout.
func gpuacct(bin, cfg string, args ...string) (string, error) {
	cmd := exec.Command(bin, append([]string{"--config", cfg}, args...)...)
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		err = fmt.Errorf("%w: %s", err, ee.Stderr)
	}
	return string(out), err
}

// watched is what watch saw: how many answers, and the first that was
// not 200.
type watched struct {
	asked int
	first string
}

// watch asks a serve for paths until stop closes, then sends what it saw.
func watch(addr string, paths []string, stop <-chan struct{}, res chan<- watched) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var w watched
	for {
		select {
		case <-stop:
			res <- w
			return
		case <-tick.C:
		}
		for _, p := range paths {
			code, body, err := get(addr, p)
			w.asked++
			if w.first == "" && (err != nil || code != http.StatusOK) {
				w.first = fmt.Sprintf("%s: %d %v %.200s", p, code, err, body)
			}
		}
	}
}

// TestPostgresStandbyServesThroughTakeover is docs/postgresql.md's "A
// standby that keeps answering": a writer serve on the primary ingests
// node gpu001; a read-only serve on the streaming standby answers the
// board, the accounting page, the API and reports, and its replica lag;
// the writer is killed (SIGKILL) and a waiting serve takes the writer
// lock while the standby's serve goes on answering; node gpu002, shipped
// after the takeover, reaches the standby, and a report there equals the
// primary's.
func TestPostgresStandbyServesThroughTakeover(t *testing.T) {
	primary := ledgerdb.NewPostgresDB(t)
	standby := onStandby(t, primary)
	bin := slurm.Binary(t, "gpuacct")
	root := t.TempDir()
	incoming, gen := filepath.Join(root, "incoming"), filepath.Join(root, "generated")
	for _, d := range []string{incoming, gen} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	begin := time.Now().UTC().Truncate(time.Hour).Add(-6 * time.Hour)
	truth, err := gendata.Generate(gen, gendata.Options{Cluster: "c1", Nodes: 2, GPUsPerNode: 2, Start: begin,
		Duration: 2 * time.Hour, Interval: time.Minute, JobsPerNode: 3, Seed: 35})
	if err != nil {
		t.Fatal(err)
	}
	firstJob := map[string]string{}
	for _, j := range truth.JobList {
		if _, ok := firstJob[j.Node]; !ok {
			firstJob[j.Node] = "/api/v1/jobs/c1/" + strconv.FormatUint(j.ID, 10)
		}
	}
	before, after := firstJob["gpu001"], firstJob["gpu002"]
	if before == "" || after == "" {
		t.Fatalf("generated jobs on %v: want some on gpu001 and gpu002", firstJob)
	}
	if err := os.Rename(filepath.Join(gen, "gpu001"), filepath.Join(incoming, "gpu001")); err != nil {
		t.Fatal(err)
	}

	aCfg := config(t, filepath.Join(root, "a"), incoming, primary)
	a := start(t, bin, aCfg)
	aAddr := a.address(t)
	waitFor(t, "gpu001's first job on the primary's serve", func() bool {
		code, _, _ := get(aAddr, before)
		return code == http.StatusOK
	})
	// The read-only serve refuses a database without a ledger: it starts
	// once the standby has replayed the writer's.
	rCfg := config(t, filepath.Join(root, "r"), incoming, standby)
	jobID := filepath.Base(before)
	poll.True(t, "gpuacct job on the standby", 120*time.Second, 500*time.Millisecond, func() bool {
		_, err := gpuacct(bin, rCfg, "job", jobID)
		return err == nil
	})
	r := start(t, bin, rCfg, "--read-only")
	rAddr := r.address(t)
	waitFor(t, "the standby's serve ready", func() bool {
		code, _, _ := get(rAddr, "/api/v1/health")
		return code == http.StatusOK
	})
	for _, p := range []string{"/", "/accounting", "/api/v1/health", before, "/api/v1/report/users?start=now-2days&end=now%2B1days"} {
		if code, body, err := get(rAddr, p); err != nil || code != http.StatusOK {
			t.Fatalf("the standby's serve: %s: %d %v %.300s", p, code, err, body)
		}
	}
	lagged := func() bool {
		v, ok := metrics(rAddr)["gpuacct_store_replica_lag_seconds"]
		f, err := strconv.ParseFloat(v, 64)
		return ok && err == nil && f >= 0 && f < 120
	}
	waitFor(t, "gpuacct_store_replica_lag_seconds on the standby's serve", lagged)

	bCfg := config(t, filepath.Join(root, "b"), incoming, primary)
	b := start(t, bin, bCfg)
	bAddr := b.address(t)
	waitFor(t, "the second serve waiting", func() bool { return metrics(bAddr)["gpuacct_store_writer_waiting"] == "1" })

	stop, seen := make(chan struct{}), make(chan watched, 1)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			close(stop)
		}
	})
	go watch(rAddr, []string{before, "/api/v1/report/teams?start=now-2days&end=now%2B1days", "/metrics"}, stop, seen)
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.cmd.Wait()
	// The writer is gone, its successor maybe not yet there: the standby answers.
	if code, body, err := get(rAddr, before); err != nil || code != http.StatusOK {
		t.Fatalf("the standby's serve with the writer killed: %d %v %.300s", code, err, body)
	}
	waitFor(t, "the second serve writing", func() bool {
		m := metrics(bAddr)
		v := m["gpuacct_ingest_last_success_timestamp_seconds"]
		return m["gpuacct_store_writer_waiting"] == "0" && v != "" && v != "0"
	})
	if err := os.Rename(filepath.Join(gen, "gpu002"), filepath.Join(incoming, "gpu002")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "gpu002's job, ingested after the takeover, on the standby's serve", func() bool {
		code, _, _ := get(rAddr, after)
		return code == http.StatusOK
	})
	close(stop)
	stopped = true
	w := <-seen
	if w.asked == 0 || w.first != "" {
		t.Errorf("the standby's serve during the takeover: %d answers, first failure: %s", w.asked, w.first)
	}
	waitFor(t, "gpuacct_store_replica_lag_seconds after the takeover", lagged)
	t.Logf("the standby's serve answered %d requests through the takeover; lag %ss", w.asked, metrics(rAddr)["gpuacct_store_replica_lag_seconds"])

	// The same report from the standby and from the primary, once the
	// standby has replayed the last pass.
	day := begin.Format("2006-01-02")
	next := begin.AddDate(0, 0, 2).Format("2006-01-02")
	poll.Until(t, "the standby's report equal to the primary's", 120*time.Second, 500*time.Millisecond, func() (bool, string) {
		want, err1 := gpuacct(bin, bCfg, "report", "users", "--start", day, "--end", next)
		got, err2 := gpuacct(bin, rCfg, "report", "users", "--start", day, "--end", next)
		if err1 != nil || err2 != nil {
			return false, fmt.Sprintf("primary: %v; standby: %v", err1, err2)
		}
		diff := cmp.Diff(want, got)
		return diff == "" && want != "", "(-primary +standby):\n" + diff
	})
}
