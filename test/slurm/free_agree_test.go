package slurm_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/testkit/fetch"
	"github.com/aicloud/gpusuite/internal/testkit/poll"
)

// kpiFree is the board page's "Free now" count.
var kpiFree = regexp.MustCompile(`id="kpi-free">(\d+)<`)

// freeCounts are the free GPUs as each reader says them: gpuacct free and
// gpuacct status (the binaries, asking the real Slurm), /api/v1/free,
// /api/v1/board and the board page.
func (e *e2e) freeCounts(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	var free board.FreeDoc
	var status board.StatusDoc
	for _, r := range []struct {
		name string
		args []string
		doc  any
	}{
		{"gpuacct free", []string{"free", "--format", "json"}, &free},
		{"gpuacct status", []string{"status", "--format", "json"}, &status},
	} {
		text, code := e.gpuacct(t, r.args...)
		if code != 0 {
			t.Fatalf("%s: exit %d:\n%s", r.name, code, text)
		}
		if err := json.Unmarshal([]byte(text), r.doc); err != nil {
			t.Fatalf("%s: %v:\n%s", r.name, err, text)
		}
	}
	out["gpuacct free"], out["gpuacct status"] = free.FreeTotal, status.Totals.Free
	var apiFree board.FreeDoc
	if err := json.Unmarshal(fetch.Get(t, e.url+"/api/v1/free"), &apiFree); err != nil {
		t.Fatalf("/api/v1/free: %v", err)
	}
	out["/api/v1/free"] = apiFree.FreeTotal
	out["/api/v1/board"] = e.status(t).Totals.Free
	m := kpiFree.FindSubmatch(fetch.Get(t, e.url+"/"))
	if m == nil {
		t.Fatal("the board page has no free count (id=kpi-free)")
	}
	out["board page"], _ = strconv.Atoi(string(m[1]))
	return out
}

// freeAgree waits until gpuacct free, gpuacct status, the API and the
// board page all count want GPUs free: one definition of free
// (board.IsFree). Each reads Slurm at its own moment, so they are polled
// until they agree rather than read once.
func (e *e2e) freeAgree(t *testing.T, what string, want int) {
	t.Helper()
	poll.Until(t, what+": free counts agree", 2*time.Minute, 500*time.Millisecond, func() (bool, string) {
		got := e.freeCounts(t)
		for _, n := range got {
			if n != want {
				return false, fmt.Sprintf("want %d free everywhere, got %v", want, got)
			}
		}
		return true, ""
	})
}
