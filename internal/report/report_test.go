package report

import (
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/cliwire"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/store"
)

// fxJob is one job run on one node for a hand-made ledger.
type fxJob struct {
	id         uint64
	restart    int
	arrayJob   uint64
	task       *int64
	user, acct string
	part, node string
	gpus       int
	start, end int64 // end 0: still running
}

// buildLedger writes the jobs' start and end events through store.Batch,
// the way ingest does, and returns the database path.
func buildLedger(t *testing.T, jobs []fxJob, now time.Time) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gpuacct.db")
	st, err := store.Open(context.Background(), store.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := st.Begin(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		kinds := []record.Kind{record.JobStart}
		if j.end != 0 {
			kinds = append(kinds, record.JobEnd)
		}
		for _, k := range kinds {
			at := j.start
			if k == record.JobEnd {
				at = j.end
			}
			ev := record.Event{Schema: record.EventSchema, Kind: k, Time: time.Unix(at, 0).UTC(), Cluster: "c1", Node: j.node,
				Key: record.EventKey("c1", j.id, j.restart, j.node, k)}
			ev.Job = record.Job{ID: j.id, RestartCount: j.restart, User: j.user, Account: j.acct, Partition: j.part, Node: j.node, Cluster: "c1",
				ArrayJobID: j.arrayJob, ArrayTaskID: j.task}
			for g := 0; g < j.gpus; g++ {
				idx := g
				ev.Job.GPUs = append(ev.Job.GPUs, g)
				ev.GPUs = append(ev.GPUs, record.GPU{Minor: g, Index: &idx, UUID: "GPU-" + j.node + "-" + strconv.Itoa(g), Model: "NVIDIA H100 80GB HBM3"})
			}
			if k == record.JobEnd {
				ev.Job.Exit = &record.Exit{}
			}
			if err := b.Event(&ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.ExtendOpen(); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	return path
}

func openTest(t *testing.T, path string) *DB {
	t.Helper()
	db, err := OpenDB(context.Background(), path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix()

// randomJobs makes job runs over about 90 days on 4 nodes: some
// requeued (restart 1, 2), some array tasks, some still running.
func randomJobs(rng *rand.Rand, n int, horizon int64) []fxJob {
	users := []string{"alice", "bob", "carol", "dave", "erin"}
	acct := map[string]string{"alice": "vision", "bob": "vision", "carol": "nlp", "dave": "nlp", "erin": "robotics"}
	var out []fxJob
	for id := uint64(100); len(out) < n; id++ {
		u := users[rng.Intn(len(users))]
		runs, tasks := 1, 1
		if rng.Intn(8) == 0 {
			runs = 2 + rng.Intn(2)
		}
		if rng.Intn(6) == 0 {
			tasks = 2 + rng.Intn(5)
		}
		for task := 0; task < tasks; task++ {
			s := t0 + rng.Int63n(horizon-86400)
			jid := id
			var tk *int64
			var arr uint64
			if tasks > 1 {
				jid = id*100 + uint64(task)
				x := int64(task)
				tk, arr = &x, id
			}
			for r := 0; r < runs; r++ {
				d := 60 + rng.Int63n(3*86400)
				e := s + d
				if rng.Intn(30) == 0 && r == runs-1 {
					e = 0
				}
				out = append(out, fxJob{id: jid, restart: r, arrayJob: arr, task: tk, user: u, acct: acct[u], part: []string{"gpu", "long"}[rng.Intn(2)],
					node: "gpu0" + strconv.Itoa(1+rng.Intn(4)), gpus: 1 + rng.Intn(8), start: s, end: e})
				s += d + 30
			}
		}
	}
	return out
}

// Allocated GPU-hours in every report, period and zone equal Σ GPUs ×
// elapsed of the jobs, restarts and array tasks included, split exactly
// at period boundaries.
func TestAllocatedEqualsGPUsTimesElapsed(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	horizon := int64(90 * 86400)
	now := time.Unix(t0+horizon, 0)
	jobs := randomJobs(rng, 250, horizon)
	db := openTest(t, buildLedger(t, jobs, now))
	for _, zone := range []string{"UTC", "Asia/Tokyo", "America/New_York"} {
		loc, _ := time.LoadLocation(zone)
		w := timespec.Window{Start: time.Unix(t0, 0).In(loc).AddDate(0, 0, -1), End: now.In(loc).AddDate(0, 0, 1)}
		w = HourWindow(w)
		for _, p := range []timespec.Period{timespec.None, timespec.Day, timespec.Week, timespec.Month} {
			bs := timespec.Buckets(w, p)
			index := map[string]int{}
			for i, b := range bs {
				index[b.Label] = i
			}
			want := make([]int64, len(bs))
			for _, j := range jobs {
				end := j.end
				if end == 0 {
					end = now.Unix()
				}
				for i, s := range timespec.Split(j.start, end, bs) {
					want[i] += int64(j.gpus) * s
				}
			}
			for _, kind := range []string{"teams", "users", "nodes", "tree"} {
				tb, err := db.Report(context.Background(), Request{Kind: kind, Window: w, Period: p})
				if err != nil {
					t.Fatal(err)
				}
				got := make([]int64, len(bs))
				col := 1
				if p != timespec.None {
					col = 2
				}
				if kind == "users" || kind == "tree" {
					col++
				}
				for _, r := range tb.Rows {
					if r.Footer || r.Child {
						continue
					}
					i := 0
					if p != timespec.None {
						var ok bool
						if i, ok = index[r.Cells[0].(string)]; !ok {
							t.Fatalf("period label %q is no bucket's", r.Cells[0])
						}
					}
					got[i] += r.Cells[col].(int64)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("%s %s %s: allocated GPU-s per period (-Σ GPUs×elapsed +report):\n%s", zone, p, kind, diff)
				}
			}
		}
	}
}

func TestTeamsWithMapping(t *testing.T) {
	now := time.Unix(t0+3*86400, 0)
	jobs := []fxJob{
		{id: 1, user: "alice", acct: "vision", part: "gpu", node: "gpu01", gpus: 2, start: t0, end: t0 + 3600},
		{id: 2, user: "carol", acct: "vision", part: "gpu", node: "gpu01", gpus: 1, start: t0, end: t0 + 7200},
		{id: 3, user: "zoe", acct: "physics", part: "gpu", node: "gpu02", gpus: 4, start: t0, end: t0 + 1800},
	}
	db := openTest(t, buildLedger(t, jobs, now))
	m, err := teams.Parse([]byte("[teams.cv]\naccounts=[\"vision\"]\n[teams.lang]\nusers=[\"carol\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	w := timespec.Window{Start: time.Unix(t0, 0).UTC(), End: now.UTC()}
	tb, err := db.Report(context.Background(), Request{Kind: "teams", Window: w, Mapping: m})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, r := range tb.Rows {
		if !r.Footer {
			got[r.Cells[0].(string)] = r.Cells[1].(int64)
		}
	}
	want := map[string]int64{"cv": 7200, "lang": 7200, teams.Unassigned: 4 * 1800}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GPU-s per team (-want +got):\n%s", diff)
	}
	// Shares are of the whole cluster even when filtered.
	tb, err = db.Report(context.Background(), Request{Kind: "teams", Window: w, Mapping: m, Teams: []string{"lang"}})
	if err != nil {
		t.Fatal(err)
	}
	if share := tb.Rows[0].Cells[7].(float64); share < 33.3 || share > 33.4 {
		t.Errorf("lang's share %v%%, want a third", share)
	}
}

// run runs one gpuacct command line against the report commands.
func run(t testing.TB, d Deps, args ...string) error {
	t.Helper()
	app := &cli.App{Name: "gpuacct", Flags: []cli.Flag{cliwire.ConfigFlag()}, ExitErrHandler: func(*cli.Context, error) {},
		Writer: d.Stdout, ErrWriter: d.Stderr,
		Commands: []*cli.Command{ReportCommand(d), JobCommand(d), CheckCommand(d), IgnoreCommand(d), UnignoreCommand(d), ExportCommand(d), PlotCommand(d)}}
	return app.Run(append([]string{"gpuacct"}, args...))
}

func TestBadInput(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	path := buildLedger(t, []fxJob{{id: 7, user: "alice", acct: "vision", part: "gpu", node: "gpu01", gpus: 1, start: t0, end: t0 + 60}}, now)
	dir := t.TempDir()
	twoTeams := filepath.Join(dir, "teams.toml")
	os.WriteFile(twoTeams, []byte("[teams.a]\nusers=[\"alice\"]\n[teams.b]\nusers=[\"alice\"]\n"), 0o644)
	notDB := filepath.Join(dir, "not.db")
	os.WriteFile(notDB, []byte("hello, this is not sqlite at all, not even close to it........................................"), 0o644)
	cfg := filepath.Join(dir, "gpusuite.toml")
	os.WriteFile(cfg, []byte("[store]\npath = \""+path+"\"\n"), 0o644)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown sub-report", []string{"report", "bogus"}, `report: unknown report "bogus": use one of teams, users`},
		{"no sub-report", []string{"report"}, "report: name a report"},
		{"bad date", []string{"report", "teams", "--db", path, "--start", "2026-02-30"}, `report teams: --start: time "2026-02-30" is not a real date and time`},
		{"bad date format", []string{"report", "teams", "--db", path, "--start", "next week"}, `report teams: --start: time "next week" is not one of YYYY-MM-DD`},
		{"end before start", []string{"report", "users", "--db", path, "--start", "2026-01-05", "--end", "2026-01-01"}, "report users: --end 2026-01-01T00:00:00 is not after --start 2026-01-05T00:00:00"},
		{"unknown team", []string{"report", "teams", "--db", path, "--teams", "nope"}, `report teams: --teams: unknown team "nope" (teams: (unassigned), vision)`},
		{"unknown node", []string{"report", "nodes", "--db", path, "--nodes", "gpu99"}, `report nodes: --nodes: unknown node "gpu99"`},
		{"missing db", []string{"report", "teams", "--db", filepath.Join(dir, "absent.db")}, "accounting database " + filepath.Join(dir, "absent.db") + " does not exist"},
		{"not a db", []string{"report", "teams", "--db", notDB}, "not a gpusuite accounting database"},
		{"user in two teams", []string{"report", "teams", "--db", path, "--teams-file", twoTeams}, `team mapping ` + twoTeams + `: user "alice" is in two teams, "a" and "b"`},
		{"bad period", []string{"report", "teams", "--db", path, "--period", "year"}, `report teams: --period "year" is not day, week or month`},
		{"bad format", []string{"report", "teams", "--db", path, "--format", "xml"}, `--format "xml" is not table, csv, tsv or json`},
		{"bad units", []string{"report", "teams", "--db", path, "--units", "days"}, `--units "days" is not hours, minutes or percent`},
		{"bad tz", []string{"report", "teams", "--db", path, "--tz", "Mars/Base"}, `--tz "Mars/Base" is not a time zone name`},
		{"bad top by", []string{"report", "top", "--db", path, "--by", "nodes"}, `report top: --by "nodes" is not users or teams`},
		{"bad sort", []string{"report", "jobs", "--db", path, "--sort", "size"}, `report jobs: --sort "size" is not start, alloc, eff or idle`},
		{"job not found", []string{"job", "--db", path, "99"}, "job 99: job not found in " + path},
		{"bad job id", []string{"job", "--db", path, "abc"}, `job "abc" is not a Slurm job id`},
		{"job without id", []string{"job", "--db", path}, "job: give one JOBID"},
		{"ignore without reason", []string{"ignore", "--db", path, "7"}, "ignore: --reason is required"},
		{"ignore unknown job", []string{"ignore", "--db", path, "--requests", dir, "--reason", "x", "8"}, "ignore: job 8: job not found"},
		{"config file db", []string{"--config", cfg, "report", "teams", "--teams", "nope"}, `unknown team "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _, _ := testDeps(now, nil)
			err := run(t, d, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is more than one line: %q", err)
			}
		})
	}
}

func TestLockedDB(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	dir := t.TempDir()
	path := filepath.Join(dir, "gpuacct.db")
	st, err := store.Open(context.Background(), store.Options{Path: path, Journal: store.JournalDelete})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// A writer in rollback-journal mode (the NFS case) holding an
	// exclusive lock longer than the reader's busy timeout.
	conn, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=DELETE")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tx, err := conn.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO meta(key, value) VALUES('x', 'y')`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`PRAGMA locking_mode`); err != nil {
		t.Fatal(err)
	}
	// Force the exclusive lock by spilling to the file.
	if _, err := tx.Exec(`CREATE TABLE big AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 200000) SELECT x, randomblob(100) FROM c`); err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	cfg := filepath.Join(dir, "gpusuite.toml")
	os.WriteFile(cfg, []byte("[store]\npath = \""+path+"\"\nbusy_timeout = \"100ms\"\n"), 0o644)
	d, _, _ := testDeps(now, nil)
	err = run(t, d, "--config", cfg, "report", "teams")
	if err == nil || !strings.Contains(err.Error(), "database is locked") {
		t.Fatalf("error %v, want a locked database", err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("more than one line: %q", err)
	}
}

// CSV and JSON of a report read back to the same figures.
func TestReportRoundTrip(t *testing.T) {
	now := time.Unix(t0+10*86400, 0)
	rng := rand.New(rand.NewSource(3))
	jobs := randomJobs(rng, 60, 9*86400)
	path := buildLedger(t, jobs, now)
	var wantAlloc int64
	for _, j := range jobs {
		end := j.end
		if end == 0 {
			end = now.Unix()
		}
		wantAlloc += int64(j.gpus) * (end - j.start)
	}
	args := []string{"report", "users", "--db", path, "--tz", "UTC", "--start", "2025-12-01", "--end", "2026-02-01"}
	d, out, _ := testDeps(now, nil)
	if err := run(t, d, append(args, "--format", "csv")...); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(out.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"user", "teams", "alloc_gpu_hours", "used_gpu_hours", "efficiency_pct", "idle_gpu_hours", "energy_kwh", "jobs", "share_pct"}, recs[0]); diff != "" {
		t.Errorf("CSV header (-want +got):\n%s", diff)
	}
	var sum float64
	for _, r := range recs[1:] {
		v, _ := strconv.ParseFloat(r[2], 64)
		sum += v
	}
	if d := sum*3600 - float64(wantAlloc); d > 1 || d < -1 {
		t.Errorf("CSV GPU-hours sum to %v GPU-s, want %d", sum*3600, wantAlloc)
	}
	d, out, _ = testDeps(now, nil)
	if err := run(t, d, append(args, "--format", "json")...); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Report string
		Start  string
		Rows   []struct {
			User  string  `json:"user"`
			Alloc float64 `json:"alloc_gpu_hours"`
			Jobs  int64   `json:"jobs"`
		}
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Report != "users" || doc.Start != "2025-12-01T00:00:00Z" || len(doc.Rows) != len(recs)-1 {
		t.Errorf("JSON %+v", doc)
	}
	var jobsN int64
	for i, r := range doc.Rows {
		if r.User != recs[i+1][0] || strconv.FormatFloat(r.Alloc, 'f', -1, 64) != recs[i+1][2] {
			t.Errorf("row %d: JSON %+v, CSV %v", i, r, recs[i+1])
		}
		jobsN += r.Jobs
	}
	if jobsN != int64(len(jobs)) {
		t.Errorf("%d jobs counted, %d run", jobsN, len(jobs))
	}
}
