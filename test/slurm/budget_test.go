package slurm_test

import (
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/poll"
	"github.com/aicloud/gpusuite/internal/testkit/slurm"
)

// TestBudgetBesideGrpTRESMins: gpuacct report budget --slurm shows an
// account's GrpTRESMins, set here with sacctmgr (and removed after), in
// the budget's unit beside the budget: billing-minutes 6000 are 100
// billing-hours, gres/gpu-minutes 600 are 10 GPU-hours, with slurmctld's
// usage of each.
func TestBudgetBesideGrpTRESMins(t *testing.T) {
	c := slurm.Get(t)
	acct := "budget-" + strconv.FormatInt(time.Now().UnixNano()/1e6%1e9, 36)
	c.Run(t, "", "sacctmgr", "-i", "add", "account", acct, "Description=budget", "Organization=budget")
	t.Cleanup(func() { c.Run(t, "", "sacctmgr", "-i", "delete", "account", acct) })
	c.Run(t, "", "sacctmgr", "-i", "modify", "account", acct, "set", "GrpTRESMins=billing=6000,gres/gpu=600")
	if got := strings.TrimSpace(c.Run(t, "", "sacctmgr", "-nP", "show", "assoc", "format=account,user,grptresmins", "where", "account="+acct)); got != acct+"||billing=6000,gres/gpu=600" {
		t.Fatalf("sacctmgr shows %q", got)
	}
	// sacctmgr has slurmdbd tell slurmctld; its association manager may
	// take a moment
	poll.True(t, "slurmctld knowing the limit", time.Minute, 100*time.Millisecond, func() bool {
		out, err := c.Cmd(context.Background(), "", "scontrol", "show", "assoc_mgr", "flags=assoc", "accounts="+acct).Output()
		return err == nil && strings.Contains(string(out), "billing=6000(")
	})

	dir := t.TempDir()
	db := filepath.Join(dir, "gpuacct.db")
	st, err := store.Open(context.Background(), store.Options{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	cfg := filepath.Join(dir, "gpusuite.toml")
	conf := "[store]\npath = \"" + db + "\"\n" +
		"[[budget.entry]]\naccount = \"" + acct + "\"\nperiod = \"month\"\namount = 150\nunit = \"billing\"\n" +
		"[[budget.entry]]\naccount = \"" + acct + "\"\nuser = \"nobody\"\nperiod = \"month\"\namount = 5\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	out := c.Run(t, "", slurm.Binary(t, "gpuacct"), "--config", cfg, "report", "budget", "--slurm", "--format", "csv", "--tz", "UTC")
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("report budget printed %q (%v)", out, err)
	}
	col := map[string]int{}
	for i, k := range rows[0] {
		col[k] = i
	}
	var got [][]string
	for _, r := range rows[1:] {
		got = append(got, []string{r[col["user"]], r[col["amount"]], r[col["slurm_limit"]], r[col["slurm_used"]]})
	}
	// nobody's association does not exist: no limit
	want := [][]string{{"", "150", "100", "0"}, {"nobody", "5", "", ""}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("budgets beside Slurm's limits (-want +got):\n%s", diff)
	}
}
