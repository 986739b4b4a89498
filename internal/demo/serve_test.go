package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/store"
)

// demoDir makes what `gpuacct demo` leaves for serve, without the
// simulated weeks: demo.json, a ledger with the booking.
func demoDir(t *testing.T, nodes, gpus int) string {
	t.Helper()
	dir := t.TempDir()
	in := Info{Cluster: "demo", Nodes: nodes, GPUs: gpus, Model: "h100", Seed: 1, NextJob: 5001}
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Path: filepath.Join(dir, dbFile)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := addBooking(ctx, st, in, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := writeInfo(dir, in); err != nil {
		t.Fatal(err)
	}
	return dir
}

// getBoard asks the demo's dashboard for the board.
func getBoard(t *testing.T, addr string) board.StatusDoc {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/api/v1/board")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc board.StatusDoc
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/board: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// jobsOf is each cell's jobs, "node/gpu" → job ids.
func jobsOf(d board.StatusDoc) map[string]string {
	out := map[string]string{}
	for _, n := range d.Nodes {
		for _, g := range n.GPUs {
			var ids []string
			for _, j := range g.Jobs {
				ids = append(ids, fmt.Sprint(j.Job))
			}
			out[fmt.Sprintf("%s/%d", n.Name, g.Index)] = strings.Join(ids, ",")
		}
	}
	return out
}

// `demo serve` on 127.0.0.1:0: the board has every state at once, the
// simulated Slurm says it is simulated, and the board moves: snapshots
// are renewed and jobs end and start, and DIR/slurm.json (what gpuacct
// free --slurm-file reads) follows the simulated Slurm. Ctrl-C (the
// context) ends it cleanly, leaving the directory as it was but the live
// snapshots and the Slurm view.
func TestServe(t *testing.T) {
	dir, work := demoDir(t, 4, 4), t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs, done := make(chan string, 1), make(chan error, 1)
	var out bytes.Buffer
	go func() {
		done <- Serve(ctx, &out, ServeOptions{Dir: dir, Listen: "127.0.0.1:0", WorkRoot: work, Ready: func(a string) { addrs <- a }})
	}()
	var addr string
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("serve ended before serving: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the board was not served within a minute")
	}

	first := getBoard(t, addr)
	for _, s := range []board.State{board.Free, board.Busy, board.Idle, board.Foreign, board.Drained, board.Reserved, board.Booked} {
		if first.Totals.States[s] == 0 {
			t.Errorf("no %s GPU on the board: %v", s, first.Totals.States)
		}
	}
	if !first.Slurm || first.SlurmError != "" || first.Totals.StaleNodes != 0 || len(first.Problems) > 0 || len(first.Nodes) != 4 {
		t.Errorf("board: slurm %v (%q), %d stale, problems %v, %d nodes", first.Slurm, first.SlurmError, first.Totals.StaleNodes, first.Problems, len(first.Nodes))
	}
	firstView, err := slurmstate.ReadFile(SlurmFile(dir))
	if err != nil {
		t.Fatalf("serving, but the simulated Slurm's view is not in its file: %v", err)
	}
	if n := firstView.Nodes; len(n) != 4 || n[3].Name != "gpu04" || n[3].Reason != drainReason ||
		len(firstView.Reservations) != 1 || firstView.Reservations[0].NodeList != "gpu03" {
		t.Errorf("slurm.json: %+v; want 4 nodes, gpu04 drained, gpu03 reserved", firstView)
	}
	var said []string
	for _, n := range first.Nodes {
		said = append(said, n.Reason)
		said = append(said, n.Reservations...)
		for _, g := range n.GPUs {
			for _, nt := range g.Notes {
				said = append(said, nt.Text)
			}
		}
	}
	if got := strings.Count(strings.Join(said, "|"), "simulated"); got != 3 {
		t.Errorf("the drain reason, the reservation and the booking should each say they are simulated: %q", said)
	}

	// Within a few cycles a snapshot is newer and a cell's job changed.
	deadline := time.Now().Add(90 * time.Second)
	newer, moved, rewritten := false, false, false
	for !(newer && moved && rewritten) {
		if time.Now().After(deadline) {
			t.Fatalf("in 90s: snapshot renewed %v, a job changed %v, slurm.json rewritten %v", newer, moved, rewritten)
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended: %v", err)
		case <-time.After(500 * time.Millisecond):
		}
		d := getBoard(t, addr)
		for i, n := range d.Nodes {
			newer = newer || n.SnapshotAt != first.Nodes[i].SnapshotAt
		}
		moved = moved || cmp.Diff(jobsOf(first), jobsOf(d)) != ""
		if v, err := slurmstate.ReadFile(SlurmFile(dir)); err != nil {
			t.Errorf("slurm.json while serving: %v", err)
		} else {
			rewritten = rewritten || (v.At.After(firstView.At) && cmp.Diff(firstView.Nodes, v.Nodes) != "")
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve ended with %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("serve still running a minute after its context ended")
	}
	if !strings.Contains(out.String(), "served at http://"+addr+"/") {
		t.Errorf("output does not give the address: %q", out.String())
	}
	if !strings.Contains(out.String(), "gpuacct free "+CLIFlags(dir)+"\n") {
		t.Errorf("output does not give the free command with --slurm-file: %q", out.String())
	}
	var left []string
	for _, g := range []string{"*", LiveDirName + "/*"} {
		m, _ := filepath.Glob(filepath.Join(dir, g))
		for _, p := range m {
			left = append(left, strings.TrimPrefix(p, dir+"/"))
		}
	}
	sort.Strings(left)
	for _, want := range []string{infoFile, dbFile, SlurmFileName, LiveDirName, LiveDirName + "/gpu01.json", LiveDirName + "/gpu04.json"} {
		if i := sort.SearchStrings(left, want); i == len(left) || left[i] != want {
			t.Errorf("%s gone from the demo directory after serve: %v", want, left)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(work, "*")); len(m) > 0 {
		t.Errorf("the nodes' directories are left behind: %v", m)
	}
}

// Bad directories and a busy address are refused with one line that
// says what to do; nothing is served.
func TestServeBadInput(t *testing.T) {
	good := demoDir(t, 2, 2)
	file := filepath.Join(t.TempDir(), "file")
	noDB := t.TempDir()
	if err := writeInfo(noDB, Info{Cluster: "demo", Nodes: 1, GPUs: 1, Model: "h100"}); err != nil {
		t.Fatal(err)
	}
	garbled, noNodes := t.TempDir(), t.TempDir()
	for d, text := range map[string]string{garbled: "{not json", noNodes: `{"schema":"gpusuite.demo/v1","cluster":"demo","nodes":0,"gpus":4,"model":"h100"}`} {
		if err := os.WriteFile(filepath.Join(d, infoFile), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, dbFile), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	missing := filepath.Join(t.TempDir(), "gone")
	locked := demoDir(t, 1, 1)
	unlock, err := lockLive(filepath.Join(locked, LiveDirName))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	for _, tc := range []struct {
		name, dir, listen, want string
	}{
		{"missing", missing, "127.0.0.1:0", fmt.Sprintf("%q is not a demo directory (it does not exist): run `gpuacct demo --dir %s` first", missing, missing)},
		{"a file", file, "127.0.0.1:0", "(it is not a directory)"},
		{"no demo.json", t.TempDir(), "127.0.0.1:0", "(no demo.json)"},
		{"garbled demo.json", garbled, "127.0.0.1:0", "(demo.json is not the demo's)"},
		{"no cluster", noNodes, "127.0.0.1:0", "(demo.json describes no cluster)"},
		{"no ledger", noDB, "127.0.0.1:0", "(no gpuacct.db)"},
		// the hint before the cause: %w comes last
		{"address in use", good, busy.Addr().String(), "demo serve: listen on " + busy.Addr().String() + " (is another demo serving? pick another port with --listen): "},
		{"served already", locked, "127.0.0.1:0", "another demo serve keeps " + filepath.Join(locked, LiveDirName) + " alive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := Serve(ctx, &bytes.Buffer{}, ServeOptions{Dir: tc.dir, Listen: tc.listen, WorkRoot: t.TempDir(),
				Ready: func(string) { t.Error("served") }})
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %v, want one line with %q", err, tc.want)
			}
		})
	}
}
