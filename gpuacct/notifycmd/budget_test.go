package notifycmd

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// budgetConfig gives account proj 4 GPU-hours for the month.
const budgetConfig = `
[[budget.entry]]
account = "proj"
period = "month"
amount = 4
`

// budgetFixture is newFixture with extra, its config pointed at another
// ledger that holds only alice's job 2 on proj (1 GPU from t0, running),
// written the way ingest does so that its GPU-hours reach the rollups the
// budgets read: 3 GPU-hours at now. (newFixture's rows carry their own
// ids, which PostgreSQL's sequences do not know.)
func budgetFixture(t *testing.T, extra string) *fixture {
	t.Helper()
	f := newFixture(t, extra)
	ctx := context.Background()
	l := ledgerdb.NewLedger(t)
	st, err := store.Open(ctx, store.Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := st.Begin(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	idx := 0
	ev := record.Event{Schema: record.EventSchema, Kind: record.JobStart, Time: t0, Cluster: "c", Node: "gpu02",
		Key: record.EventKey("c", 2, 0, "gpu02", record.JobStart)}
	ev.Job = record.Job{ID: 2, User: "alice", Account: "proj", Partition: "gpu", Node: "gpu02", Cluster: "c", GPUs: []int{0}}
	ev.GPUs = []record.GPU{{Minor: 0, Index: &idx, UUID: "GPU-2", Model: "NVIDIA H100 80GB HBM3"}}
	if err := b.Event(&ev); err != nil {
		t.Fatal(err)
	}
	if err := b.ExtendOpen(); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	key := func(l ledgerdb.Ledger) string {
		if l.URL != "" {
			return "url = \"" + l.URL + "\""
		}
		return "path = \"" + l.Path + "\""
	}
	if !strings.Contains(string(cfg), key(f.db)) {
		t.Fatalf("config %s does not name the ledger %s", cfg, key(f.db))
	}
	cfg = []byte(strings.Replace(string(cfg), key(f.db), key(l), 1))
	f.db = l
	if err := os.WriteFile(f.cfg, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestOnceBudgetRule: --once runs the budget rule as gpuacct serve does:
// proj has used 3 of its 4 GPU-hours (75 %) at 3 a day, so alice, who
// used it, is warned of 50 % and that it runs out on 2 March, once: a
// second pass decides the same messages and sends none.
func TestOnceBudgetRule(t *testing.T) {
	f := budgetFixture(t, budgetConfig)
	to := "alice-" + f.stamp + "@example.org"
	for i, want := range []string{" 2 new; 2 sent,", " 0 new; 0 sent,"} {
		code, out, errs := f.run(t, 0, "root", "--once")
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("--once #%d: exit %d, %q %s; want %q", i+1, code, out, errs, want)
		}
	}
	var got []string
	for _, m := range f.sink.To(t, to, 2) {
		if strings.Contains(m.Subject, "budget") {
			got = append(got, m.Subject)
		}
	}
	// in the order the sink's files sort, not necessarily as sent
	slices.Sort(got)
	want := []string{"[gpusuite] budget proj, 2026-03: 75 % used", "[gpusuite] budget proj, 2026-03: runs out on 2026-03-02 at this pace"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("budget mails to alice:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestOnceBadBudget: a budget of an account the ledger does not know
// (it knows proj) is one line naming the entry, exit 2, and nothing is
// sent.
func TestOnceBadBudget(t *testing.T) {
	f := budgetFixture(t, strings.ReplaceAll(budgetConfig, `"proj"`, `"nosuch"`))
	code, out, errs := f.run(t, 0, "root", "--once")
	if code != 2 || out != "" || !strings.Contains(errs, "nosuch") || strings.Count(errs, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and one line naming nosuch", code, out, errs)
	}
	if got := f.sink.To(t, "alice-"+f.stamp+"@example.org", 0); len(got) != 0 {
		t.Errorf("%d messages sent, want none", len(got))
	}
}
