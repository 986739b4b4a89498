package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/web"
)

// TestProcNames: a process's command name from the live snapshot shows
// on the board's JSON and page, escaped; under web.private_data only to
// those who may see its owner (an admin, the owner), and the page, one
// rendering for every private viewer, names no command.
func TestProcNames(t *testing.T) {
	dir := t.TempDir()
	g := liveGPU(0, 80, 4096, 7)
	g.Procs[0].Name = "python3"
	g.Procs = append(g.Procs, record.LiveProc{PID: 4242, User: "mallory", Name: "<script>miner", MemUsedMiB: 1024})
	writeSnapshot(t, dir, record.Live{Node: "n1", GPUs: []record.LiveGPU{g}})
	st := slurmstate.State{At: boardNow, Nodes: []slurmstate.Node{slurmNode("n1", slurmstate.Mixed, 1, "gpu")}}
	src := board.NewSource(board.SourceOptions{LiveDir: dir, Now: func() time.Time { return boardNow }, MaxAge: time.Millisecond,
		Slurm: func(context.Context) (slurmstate.State, error) { return st, nil }})
	src.RefreshSlurm(context.Background())

	open := newBoardServer(t, web.Options{Board: src})
	private := newBoardServer(t, web.Options{Board: src, PrivateData: true, Admins: []string{"boss"}, UserHeader: "X-Remote-User"})
	c := &http.Client{Timeout: 30 * time.Second}
	get := func(base, path, user string) string {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.Header.Set("X-Remote-User", user)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s as %q: %v", path, user, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s as %q: %d %.300s", path, user, resp.StatusCode, b)
		}
		return string(b)
	}
	// names are the command names of the status document by PID.
	names := func(body string) map[uint32]string {
		t.Helper()
		var doc board.StatusDoc
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatalf("status document: %v in %.300s", err, body)
		}
		out := map[uint32]string{}
		for _, n := range doc.Nodes {
			for _, g := range n.GPUs {
				for _, p := range g.Procs {
					out[p.PID] = p.Name
				}
			}
		}
		return out
	}

	for _, tc := range []struct {
		name, base, user string
		want             map[uint32]string
	}{
		{"no private data", open.URL, "", map[uint32]string{1007: "python3", 4242: "<script>miner"}},
		{"an admin", private.URL, "boss", map[uint32]string{1007: "python3", 4242: "<script>miner"}},
		{"the owner", private.URL, "u7", map[uint32]string{1007: "python3", 4242: ""}},
		{"another user", private.URL, "u8", map[uint32]string{1007: "", 4242: ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, names(get(tc.base, "/api/v1/board", tc.user))); d != "" {
				t.Errorf("command names in /api/v1/board (-want +got):\n%s", d)
			}
		})
	}

	page := get(open.URL, "/", "")
	if !strings.Contains(page, `<span class="cmd">python3</span>`) || !strings.Contains(page, `<span class="cmd">&lt;script&gt;miner</span>`) {
		t.Errorf("the board's page does not show both commands, escaped")
	}
	if strings.Contains(page, "<script>miner") {
		t.Errorf("the board's page shows a command unescaped")
	}
	for _, user := range []string{"u7", "u8"} {
		if page := get(private.URL, "/", user); strings.Contains(page, "python3") || strings.Contains(page, "miner") {
			t.Errorf("the private board's page as %s names a command", user)
		}
	}
}
