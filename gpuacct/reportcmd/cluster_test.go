package reportcmd

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

// clusterLedger is a ledger of one 4-GPU job for an hour on a cluster of
// 8 GPUs, with Slurm's facts as ingest stores them.
func clusterLedger(t *testing.T, now time.Time) string {
	t.Helper()
	path := buildLedger(t, []fxJob{{ID: 1, User: "alice", Acct: "vision", Part: "gpu", Node: "n1", GPUs: 4, Start: t0, End: t0 + 3600}}, now)
	st, err := openWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := st.Begin(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SetClusterFacts(store.ClusterFacts{From: t0 - 86400, To: now.Unix(),
		Events: []store.SlurmEvent{{Cluster: "c1", Start: t0 - 86400, GPUs: 8}}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReportCluster(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	path := clusterLedger(t, now)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"seconds, as sreport -t seconds -P -n", []string{"-t", "seconds", "-P", "-n"}, "c1|14400|0|0|43200|0|57600|0|25|75\n"},
		// Every column is already a share of the capacity: no second
		// name for allocated's and idle's.
		{"percent of the capacity", []string{"-t", "percent", "--format", "csv"},
			"cluster,allocated_gpu_pct,down_gpu_pct,planned_down_gpu_pct,idle_gpu_pct,planned_gpu_pct,reported_gpu_pct,reserved_gpu_pct\n" +
				"c1,25,0,0,75,0,100,0\n"},
		{"percent, parsable", []string{"-t", "percent", "-P", "-n"}, "c1|25|0|0|75|0|100|0\n"},
		{"per hour of the day: the second hour idle", []string{"--period", "day", "-P", "-n", "--end", "2026-01-02"}, "2026-01-01|c1|4|0|0|188|0|192|0|2.08|97.92\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, out, _ := testDeps(now, nil)
			args := append([]string{"report", "cluster", dbOpt(path), "--tz", "UTC", "--start", "2026-01-01T00:00", "--end", "2026-01-01T02:00"}, c.args...)
			if err := run(t, d, args...); err != nil {
				t.Fatal(err)
			}
			if got := out.String(); got != c.want {
				t.Errorf("report cluster %v:\n%s\nwant:\n%s", c.args, got, c.want)
			}
		})
	}
	t.Run("table", func(t *testing.T) {
		d, out, _ := testDeps(now, nil)
		if err := run(t, d, "report", "cluster", dbOpt(path), "--tz", "UTC", "--start", "2026-01-01", "--end", "2026-01-01T02:00"); err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"GPU utilization of c1", "ALLOCATED GPU-H", "REPORTED GPU-H", "16"} {
			if !strings.Contains(out.String(), s) {
				t.Errorf("table lacks %q:\n%s", s, out.String())
			}
		}
	})
	t.Run("an end after now is now, as sreport takes it", func(t *testing.T) {
		// Now 01:20: the window 00:00-03:00 reads 00:00-01:20, rounded
		// 00:00-01:00, as sreport: not the hour now falls in.
		early := time.Date(2026, 1, 1, 1, 20, 0, 0, time.UTC)
		d, out, _ := testDeps(early, nil)
		if err := run(t, d, "report", "cluster", dbOpt(path), "--tz", "UTC", "--start", "2026-01-01T00:00", "--end", "2026-01-01T03:00", "-t", "seconds", "-P", "-n"); err != nil {
			t.Fatal(err)
		}
		if got, want := out.String(), "c1|14400|0|0|14400|0|28800|0|50|50\n"; got != want {
			t.Errorf("report cluster at 01:20 over 00:00-03:00: %q, want %q (the first hour only)", got, want)
		}
	})
	t.Run("no cluster in the ledger", func(t *testing.T) {
		empty := buildLedger(t, nil, now)
		d, out, _ := testDeps(now, nil)
		if err := run(t, d, "report", "cluster", dbOpt(empty), "--tz", "UTC", "--start", "2026-01-01", "--end", "2026-01-01T02:00"); err != nil {
			t.Fatal(err)
		}
		if want := "GPU utilization (no cluster in the ledger yet), 2026-01-01 00:00"; !strings.Contains(out.String(), want) {
			t.Errorf("title on an empty ledger: want %q in\n%s", want, out.String())
		}
	})
	t.Run("help examples run", func(t *testing.T) {
		for _, line := range strings.Split(clusterExamples, "\n")[1:] {
			cmd, _, _ := strings.Cut(line, "#")
			args := strings.Fields(cmd)[1:]
			d, _, _ := testDeps(now, nil)
			if err := run(t, d, append(args, dbOpt(path))...); err != nil {
				t.Errorf("%s: %v", strings.TrimSpace(cmd), err)
			}
		}
	})
}

func TestReportClusterBadInput(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	path := clusterLedger(t, now)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"argument", []string{"extra"}, `unexpected argument "extra"`},
		{"period", []string{"--period", "fortnight"}, "fortnight"},
		{"units", []string{"-t", "days"}, `--units "days"`},
		{"format", []string{"--format", "xml"}, `--format "xml"`},
		{"start", []string{"--start", "yesterdayish"}, "yesterdayish"},
		{"six years", []string{"--start", "2020-01-01", "--end", "2026-01-01"}, "at most"},
		{"cluster", []string{"-M", "c9"}, `no cluster "c9"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, out, _ := testDeps(now, nil)
			err := run(t, d, append([]string{"report", "cluster", dbOpt(path)}, c.args...)...)
			if exitCode(err) != 2 || !strings.Contains(err.Error(), c.want) {
				t.Errorf("report cluster %v: %v, want exit 2 saying %q", c.args, err, c.want)
			}
			if out.Len() != 0 {
				t.Errorf("output on bad input: %q", out.String())
			}
		})
	}
}
