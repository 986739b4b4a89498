package slurm_test

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/aicloud/gpusuite/internal/testkit/slurm"
)

// billedWeights are the harness's weights of partition billed
// (docs/budgets.md's example); billedRaised raises the a100's.
const (
	billedWeights = "CPU=1.0,Mem=0.25G,GRES/gpu:a100=4.0,GRES/gpu:t4=0.5"
	billedRaised  = "CPU=1.0,Mem=0.25G,GRES/gpu:a100=8.0,GRES/gpu:t4=0.5"
)

// TestBillingEqualsSreport runs jobs on typed GPUs (a100, t4) in a
// partition with TRESBillingWeights, the a100's weight raised between two
// of them; after slurmdbd rolls the hours up, gpuacct's billing per
// account and user (report -T billing) equals `sreport -t seconds -T
// billing cluster AccountUtilizationByUser`, and each run is billed at
// the weight of its own start: Slurm's billing=N × its seconds.
func TestBillingEqualsSreport(t *testing.T) {
	c := slurm.Get(t)
	gpuacct := slurm.Binary(t, "gpuacct")
	tag := strconv.FormatInt(time.Now().Unix(), 36)
	a, b := "billing-a-"+tag, "billing-b-"+tag
	st := sreportTest{accounts: []string{a, b}, users: map[string][]string{"billing1": {a}, "billing2": {b}}}
	addSreportAssociations(t, c, st)
	// Whatever the test leaves, the partition's weights are the harness's.
	t.Cleanup(func() {
		c.Run(t, "", "scontrol", "update", "PartitionName=billed", "TRESBillingWeights="+billedWeights)
	})
	c.Run(t, "", "scontrol", "update", "PartitionName=billed", "TRESBillingWeights="+billedWeights)

	first := time.Now()
	submit := func(user, acct string, args ...string) uint64 {
		return c.Sbatch(t, user, append([]string{"-p", "billed", "-A", acct}, args...)...)
	}
	ids := []uint64{
		submit("billing1", a, "--gres=gpu:a100:1", "-c", "2", "--mem=1G", "--wrap", "sleep 3"),
		submit("billing2", b, "--gres=gpu:t4:2", "-c", "4", "--mem=2G", "--wrap", "sleep 4"),
	}
	c.WaitAccounted(t, 4*time.Minute, len(ids), ids...)
	for _, id := range ids {
		c.WaitGone(t, id, 2*time.Minute)
	}
	c.Run(t, "", "scontrol", "update", "PartitionName=billed", "TRESBillingWeights="+billedRaised)
	ids = append(ids, submit("billing1", a, "--gres=gpu:a100:1", "-c", "2", "--mem=1G", "--wrap", "sleep 3"))
	c.WaitAccounted(t, 4*time.Minute, len(ids), ids...)
	c.WaitGone(t, ids[2], 2*time.Minute)

	billing := sacctBilling(t, c, ids)
	t.Logf("sacct's billing=N of jobs %v: %v", ids, billing)
	if billing[ids[2]] <= billing[ids[0]] {
		t.Errorf("job %d, after the a100's weight was raised, billed %d a second; job %d, before, %d: want more",
			ids[2], billing[ids[2]], ids[0], billing[ids[0]])
	}

	from := first.UTC().Truncate(time.Hour)
	to := time.Now().UTC().Truncate(time.Hour).Add(time.Hour)
	const ts = "2006-01-02T15:04:05"
	out := rolledUp(t, c, from, to, func(out string) bool {
		for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
			if f := strings.Split(line, "|"); len(f) == 6 && f[5] != "0" {
				return true
			}
		}
		return false
	}, "-t", "seconds", "-T", "billing", "-P", "-n", "cluster", "AccountUtilizationByUser",
		"cluster=testcl", "accounts="+a+","+b, "start="+from.Local().Format(ts), "end="+to.Local().Format(ts))
	sreported := map[string]int64{}
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 6 || f[4] != "billing" {
			t.Fatalf("sreport line %q: want Cluster|Account|Login|Proper Name|TRES Name|Used\n%s", line, out)
		}
		v, err := strconv.ParseInt(f[5], 10, 64)
		if err != nil {
			t.Fatalf("sreport line %q: %v", line, err)
		}
		k := f[1]
		if f[2] != "" {
			k += "/" + f[2]
		}
		if v != 0 {
			sreported[k] = v
		}
	}
	t.Logf("sreport -t seconds -T billing, %s to %s: %v", from.Format(ts), to.Format(ts), sreported)

	l, _ := sreportLedger(t, gpuacct, c, ids, "sacct")
	runs := sacctRuns(t, c, ids)
	for _, r := range runs {
		want := billing[r.id] * r.elapsed
		got := strings.TrimSpace(strings.Join(ledgerdb.Strings(t, l.db, fmt.Sprintf(`SELECT CAST(round(billing) AS INTEGER) FROM jobs WHERE job_id = %d`, r.id)), ""))
		if got != strconv.FormatInt(want, 10) {
			t.Errorf("job %d: ledger billing %s, want Slurm's billing=%d × ElapsedRaw=%d = %d", r.id, got, billing[r.id], r.elapsed, want)
		}
	}
	if d := cmp.Diff(sreported, gpuacctBilling(t, l, st, from, to)); d != "" {
		t.Errorf("billing-unit-seconds per account and user, %s to %s (-sreport +gpuacct):\n%s", from.Format(ts), to.Format(ts), d)
	}
}

// sacctBilling is each job's billing=N of sacct's AllocTRES.
func sacctBilling(t *testing.T, c *slurm.Cluster, ids []uint64) map[uint64]int64 {
	t.Helper()
	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = strconv.FormatUint(id, 10)
	}
	out := c.Run(t, "", "sacct", "-X", "-n", "-P", "-o", "JobIDRaw,AllocTRES", "-j", strings.Join(list, ","))
	got := map[uint64]int64{}
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		id, tres, _ := strings.Cut(line, "|")
		for part := range strings.SplitSeq(tres, ",") {
			if v, ok := strings.CutPrefix(part, "billing="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				j, err2 := strconv.ParseUint(id, 10, 64)
				if err != nil || err2 != nil {
					t.Fatalf("sacct line %q", line)
				}
				got[j] = n
			}
		}
	}
	if len(got) != len(ids) {
		t.Fatalf("sacct AllocTRES of %v has billing for %d jobs:\n%s", ids, len(got), out)
	}
	return got
}

// gpuacctBilling is gpuacct's billing-unit-seconds of the test's accounts
// and their users, keyed as sreport's: report accounts and users -A with
// -T billing, in JSON (billing hours × 3600, rounded).
func gpuacctBilling(t *testing.T, l *ledger, st sreportTest, from, to time.Time) map[string]int64 {
	t.Helper()
	const ts = "2006-01-02T15:04:05"
	window := []string{"-T", "billing", "--format", "json", "--tz", "UTC", "--start", from.Format(ts), "--end", to.Format(ts)}
	got := map[string]int64{}
	read := func(args []string, key func(map[string]any) string) {
		out, _ := l.run(t, append(append([]string{"report"}, args...), window...)...)
		var rep struct {
			Rows []map[string]any `json:"rows"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("gpuacct report %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		for _, r := range rep.Rows {
			h, ok := r["billing_hours"].(float64)
			if !ok {
				t.Fatalf("gpuacct report %s: row without billing_hours: %v", strings.Join(args, " "), r)
			}
			if s := int64(math.Round(h * 3600)); s != 0 {
				got[key(r)] = s
			}
		}
	}
	read([]string{"accounts", "-A", strings.Join(st.accounts, ",")}, func(r map[string]any) string { return fmt.Sprint(r["account"]) })
	for _, a := range st.accounts {
		read([]string{"users", "-A", a}, func(r map[string]any) string { return a + "/" + fmt.Sprint(r["user"]) })
	}
	return got
}
