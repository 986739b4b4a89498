package slurm_test

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/aicloud/gpusuite/internal/testkit/slurm"
)

// seffFigures is a run's usage as this test reads it from `sacct -P`
// (every step listed, memory in KiB), apart from gpusuite's own parsing,
// and its shares by seff's formulas.
type seffFigures struct {
	AllocCPUs, Elapsed, Limit int64   // CPUs; seconds
	ReqMemKiB, MaxRSSKiB      float64 // per node; highest of any step
	TotalCPU                  float64 // seconds
	CPUEff, MemEff, TimeEff   float64
}

// seffOf reads sacct's usage of the runs of ids: the run's line gives
// CPUs, TotalCPU (over its steps), ReqMem (the total: per node on one
// node), time limit and elapsed; its steps' lines MaxRSS.
func seffOf(t *testing.T, c *slurm.Cluster, ids []uint64) map[uint64]seffFigures {
	t.Helper()
	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = strconv.FormatUint(id, 10)
	}
	out := c.Run(t, "", "sacct", "-P", "-n", "--units=K", "-j", strings.Join(list, ","),
		"-o", "JobIDRaw,AllocCPUS,TotalCPU,ReqMem,MaxRSS,TimelimitRaw,ElapsedRaw,NNodes")
	kib := func(s string) float64 {
		v, err := strconv.ParseFloat(strings.TrimSuffix(s, "K"), 64)
		if err != nil && s != "" {
			t.Fatalf("sacct size %q: %v", s, err)
		}
		return v
	}
	got := map[uint64]seffFigures{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 8 {
			t.Fatalf("sacct line %q: want 8 fields", line)
		}
		job, _, isStep := strings.Cut(f[0], ".")
		id, err := strconv.ParseUint(job, 10, 64)
		if err != nil {
			t.Fatalf("sacct line %q: %v", line, err)
		}
		s := got[id]
		if isStep {
			s.MaxRSSKiB = math.Max(s.MaxRSSKiB, kib(f[4]))
			got[id] = s
			continue
		}
		s.AllocCPUs, _ = strconv.ParseInt(f[1], 10, 64)
		s.TotalCPU = cpuSeconds(t, f[2])
		s.ReqMemKiB = kib(f[3])
		limit, _ := strconv.ParseInt(f[5], 10, 64)
		s.Limit = limit * 60
		s.Elapsed, _ = strconv.ParseInt(f[6], 10, 64)
		got[id] = s
	}
	for id, s := range got {
		s.CPUEff = s.TotalCPU / float64(s.AllocCPUs*s.Elapsed)
		s.MemEff = s.MaxRSSKiB / s.ReqMemKiB
		s.TimeEff = float64(s.Elapsed) / float64(s.Limit)
		got[id] = s
	}
	return got
}

// cpuSeconds reads sacct's [D-][HH:]MM:SS[.mmm].
func cpuSeconds(t *testing.T, s string) float64 {
	t.Helper()
	var days float64
	if d, rest, ok := strings.Cut(s, "-"); ok {
		days, _ = strconv.ParseFloat(d, 64)
		s = rest
	}
	var secs float64
	for _, p := range strings.Split(s, ":") {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil {
			t.Fatalf("sacct TotalCPU %q: %v", s, err)
		}
		secs = secs*60 + v
	}
	return days*86400 + secs
}

// TestUsageEqualsSeff: real jobs that burn one core of four, touch a
// known amount of memory, and end at a known share of their time limit;
// after one ingest pass with sacct the ledger holds, per run (an array's
// tasks each), the CPUs, TotalCPU, memory asked, peak RSS, limit and
// elapsed seconds sacct gives, and its shares equal seff's.
func TestUsageEqualsSeff(t *testing.T) {
	c := slurm.Get(t)
	slurm.EnsureUser(t, "alice")
	gpuacct := slurm.Binary(t, "gpuacct")

	const touchMiB = 200
	touch := "python3 -c 'import time; b = bytearray(" + strconv.Itoa(touchMiB) + " << 20); b[::4096] = b\"x\" * len(b[::4096]); time.sleep(3)'"
	burn := "timeout 15 sh -c 'while :; do :; done'; true"
	jobs := []struct {
		name string
		args []string
	}{
		{"one core of four, a quarter of its time", []string{"-c", "4", "--mem=512M", "--time=1", "--gres=gpu:1", "--wrap", burn}},
		{"touches 200 MiB", []string{"-c", "1", "--mem=1G", "--time=2", "--gres=gpu:1", "--wrap", "srun -n1 " + touch}},
		{"array", []string{"-c", "2", "--mem-per-cpu=256M", "--time=1", "--array=0-1", "--gres=gpu:1", "--wrap", "srun -n1 sh -c 'timeout 3 sh -c \"while :; do :; done\"; true'"}},
	}
	ids := make([]uint64, len(jobs))
	for i, j := range jobs {
		ids[i] = c.Sbatch(t, "alice", append([]string{"-A", "team-a"}, j.args...)...)
	}
	rows := c.WaitAccounted(t, 3*time.Minute, len(jobs)+1, ids...)
	if len(rows) != len(jobs)+1 {
		t.Fatalf("sacct has %d rows for %d jobs (an array of 2): %+v", len(rows), len(jobs), rows)
	}
	for _, r := range rows {
		waitEvent(t, c, r.JobIDRaw, record.JobStart, 60*time.Second)
		waitEvent(t, c, r.JobIDRaw, record.JobEnd, 60*time.Second)
	}
	runIDs := make([]uint64, len(rows))
	for i, r := range rows {
		runIDs[i] = r.JobIDRaw
	}
	seff := seffOf(t, c, runIDs)
	l := newLedger(t, gpuacct, c, rows, nil, "sacct")

	st, err := store.Open(context.Background(), store.Options{Path: l.db, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rowOf := map[uint64]int64{}
	ledgerdb.Query(t, st.Path, `SELECT id, job_id FROM jobs WHERE cluster = 'testcl'`, nil, func(scan func(...any)) {
		var row, job int64
		scan(&row, &job)
		rowOf[uint64(job)] = row
	})
	var keys []int64
	for _, id := range runIDs {
		keys = append(keys, rowOf[id])
	}
	usage, err := st.Resources(context.Background(), keys)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		t.Run(r.JobID, func(t *testing.T) {
			u, ok := usage[rowOf[r.JobIDRaw]]
			if !ok {
				t.Fatalf("job %d (%s): no usage in the ledger", r.JobIDRaw, r.JobID)
			}
			s := seff[r.JobIDRaw]
			e := u.Efficiency()
			t.Logf("sacct %+v; ledger %+v, %+v", s, u, e)
			if !u.TotalCPU.Known || !u.MaxRSS.Known || !u.ReqMem.Known || !u.TimeLimit.Known {
				t.Fatalf("job %d: a figure not recorded with jobacct_gather/linux: %+v", r.JobIDRaw, u)
			}
			type figures struct {
				CPUs, Elapsed, Limit int64
				ReqMem, MaxRSS       int64 // bytes
				TotalCPUms           int64
			}
			want := figures{s.AllocCPUs, s.Elapsed, s.Limit, int64(s.ReqMemKiB * 1024), int64(s.MaxRSSKiB * 1024), int64(math.Round(s.TotalCPU * 1000))}
			got := figures{u.AllocCPUs, int64(u.Elapsed / time.Second), u.TimeLimit.Value, u.ReqMem.Value, u.MaxRSS.Value, u.TotalCPU.Value}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("job %d: sacct vs ledger (-sacct +ledger):\n%s", r.JobIDRaw, d)
			}
			// TotalCPU to the millisecond: shares agree to 1e-6.
			for _, p := range []struct {
				name     string
				seff     float64
				gpusuite float64
				recorded bool
			}{{"CPU", s.CPUEff, e.CPU.Value, e.CPU.Known}, {"memory", s.MemEff, e.Memory.Value, e.Memory.Known}, {"time", s.TimeEff, e.Time.Value, e.Time.Known}} {
				if !p.recorded || math.Abs(p.seff-p.gpusuite) > 1e-6 {
					t.Errorf("job %d: %s efficiency %.6f (known %v), seff's %.6f", r.JobIDRaw, p.name, p.gpusuite, p.recorded, p.seff)
				}
			}
		})
	}
	// What the jobs did shows: one core of four burnt (at most a quarter,
	// and something), the touched memory in the peak, the time used.
	first := usage[rowOf[ids[0]]].Efficiency()
	if first.CPU.Value <= 0 || first.CPU.Value > 0.3 {
		t.Errorf("job burning one core of 4: CPU efficiency %.3f, want a quarter or less (0, 0.3]", first.CPU.Value)
	}
	if first.Time.Value < 0.25 || first.Time.Value > 0.75 {
		t.Errorf("job of 15 s of a minute's limit: time efficiency %.3f, want 0.25 or a little more", first.Time.Value)
	}
	if rss := usage[rowOf[ids[1]]].MaxRSS.Value; rss < touchMiB<<20 || rss > 1<<30 {
		t.Errorf("job touching %d MiB: peak RSS %d bytes", touchMiB, rss)
	}
}
