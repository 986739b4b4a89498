package migratecmd

import (
	"bytes"
	"context"
	"flag"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/cmdline"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

var now = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// fixture is a SQLite ledger of two nodes, a finished job on both and a
// pass, written by the store's writer, and a configuration naming it.
type fixture struct {
	dir, db, cfg string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{dir: dir, db: filepath.Join(dir, "acct.db"), cfg: filepath.Join(dir, "gpusuite.toml")}
	if err := os.WriteFile(f.cfg, []byte("[store]\npath = \""+f.db+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Path: f.db})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := st.Begin(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, node := range []string{"gpu01", "gpu02"} {
		for kind, at := range map[record.Kind]time.Time{record.JobStart: now.Add(-3 * time.Hour), record.JobEnd: now.Add(-time.Hour)} {
			e := &record.Event{Schema: record.EventSchema, Kind: kind, Time: at, Cluster: "c1", Node: node}
			e.Job.ID, e.Job.User, e.Job.Account, e.Job.Partition, e.Job.GPUs = 42, "alice", "physics", "gpu", []int{0, 1}
			e.Key = record.EventKey("c1", 42, 0, node, kind)
			if err := b.Event(e); err != nil {
				b.Rollback()
				t.Fatal(err)
			}
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordPass(ctx, store.Pass{Started: now, Finished: now.Add(time.Second), OK: true, Files: 2, Records: 4}); err != nil {
		t.Fatal(err)
	}
	return f
}

// run runs gpuacct ARGS with the fixture's configuration and returns the
// exit code, stdout and stderr.
func (f *fixture) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	d := Deps{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
		if k == "GPUSUITE_CONFIG" {
			return f.cfg
		}
		return ""
	}}
	app := &cli.App{Name: "gpuacct", Writer: &out, ErrWriter: &errb, Flags: []cli.Flag{cliwire.ConfigFlag()}, Commands: []*cli.Command{Command(d)}}
	cliwire.Prepare(app)
	err := app.Run(append([]string{"gpuacct"}, args...))
	return cliwire.Finish("gpuacct", &errb, err), out.String(), errb.String()
}

// golden compares got, with the fixture's directory as TMP, to
// testdata/name.golden.
func (f *fixture) golden(t *testing.T, name, got string) {
	t.Helper()
	cmdline.Golden(t, filepath.Join("testdata", name+".golden"), strings.ReplaceAll(got, f.dir, "TMP"), *update)
}

// TestMigrateGolden runs the help's second example on the fixture: a
// copy, the same command again (it finds everything copied), and
// --verify-only; then the copy serves as a ledger.
func TestMigrateGolden(t *testing.T) {
	f := newFixture(t)
	to := "sqlite:" + filepath.Join(f.dir, "copy.db")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"copy", []string{"migrate", "--from", "sqlite:" + f.db, "--to", to, "--batch", "2"}},
		{"again", []string{"migrate", "--from", f.db, "--to", to, "--batch", "50000"}},
		{"verify", []string{"migrate", "--to", to, "--verify-only"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := f.run(t, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			f.golden(t, tc.name, out)
			f.golden(t, tc.name+"_progress", errs)
		})
	}
	r, err := store.Open(context.Background(), store.Options{Path: filepath.Join(f.dir, "copy.db"), ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	jobs, alloc, err := r.JobTotals(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if jobs != 1 || alloc != 4*2*3600 {
		t.Errorf("the copy holds %d jobs of %d GPU-seconds, want 1 of %d", jobs, alloc, 4*2*3600)
	}
}

// TestMigrateEnv: the flags come from GPUSUITE_MIGRATE_* when not given.
func TestMigrateEnv(t *testing.T) {
	f := newFixture(t)
	t.Setenv("GPUSUITE_MIGRATE_FROM", f.db)
	t.Setenv("GPUSUITE_MIGRATE_TO", filepath.Join(f.dir, "env.db"))
	t.Setenv("GPUSUITE_MIGRATE_BATCH", "1")
	code, _, errs := f.run(t, "migrate")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "1 rows a batch") {
		t.Errorf("GPUSUITE_MIGRATE_BATCH=1 not taken: %s", errs)
	}
	t.Setenv("GPUSUITE_MIGRATE_VERIFY_ONLY", "true")
	code, out, errs := f.run(t, "migrate")
	if code != 0 || !strings.Contains(out, "nothing copied") {
		t.Errorf("GPUSUITE_MIGRATE_VERIFY_ONLY=true: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestMigrateBadInput: each bad flag or ledger gets one line saying what
// is wrong, exit 2 for usage and 1 for a failure.
func TestMigrateBadInput(t *testing.T) {
	f := newFixture(t)
	other := filepath.Join(f.dir, "other.db")
	st, err := store.Open(context.Background(), store.Options{Path: other})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RecordPass(context.Background(), store.Pass{Started: now, Finished: now}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no to", []string{"migrate"}, 2, "gpuacct: migrate: --to is required: the ledger to copy into (sqlite:PATH or postgres://USER@HOST/DB)"},
		{"empty to", []string{"migrate", "--to", ""}, 2, "gpuacct: migrate: --to is empty: give sqlite:PATH, PATH or postgres://USER@HOST/DB"},
		{"other scheme", []string{"migrate", "--to", "mysql://u:secret@h/db"}, 2, `gpuacct: migrate: --to "mysql://u:xxxxx@h/db": a ledger is sqlite:PATH, PATH or postgres://…, not mysql://`},
		{"sqlite without path", []string{"migrate", "--to", "sqlite:"}, 2, `gpuacct: migrate: --to "sqlite:" names no file: give sqlite:PATH`},
		{"bad url", []string{"migrate", "--to", "postgres://u:secret@h:port/db"}, 2, `gpuacct: migrate: --to is not a URL (postgres://USER:PASSWORD@HOST/DB): invalid port ":port" after host`},
		{"batch zero", []string{"migrate", "--to", "x.db", "--batch", "0"}, 2, "gpuacct: migrate: --batch 0: give 1 to 1000000 rows"},
		{"batch huge", []string{"migrate", "--to", "x.db", "--batch", "2000000"}, 2, "gpuacct: migrate: --batch 2000000: give 1 to 1000000 rows"},
		{"batch not a number", []string{"migrate", "--to", "x.db", "--batch", "many"}, 2, `gpuacct: invalid value "many" for flag -batch: parse error (see 'gpuacct migrate --help')`},
		{"same ledger", []string{"migrate", "--to", "sqlite:" + f.db}, 2, "gpuacct: migrate: --from and --to are the same ledger (TMP/acct.db)"},
		{"argument", []string{"migrate", "--to", "x.db", "extra"}, 2, `gpuacct: migrate: unexpected argument "extra" (see 'gpuacct migrate --help')`},
		{"unknown flag", []string{"migrate", "--bogus"}, 2, "gpuacct: unknown option --bogus (see 'gpuacct migrate --help')"},
		{"missing source", []string{"migrate", "--from", filepath.Join(f.dir, "none.db"), "--to", "x.db"}, 1,
			`gpuacct: migrate: source: open store "TMP/none.db": stat TMP/none.db: no such file or directory`},
		{"destination directory missing", []string{"migrate", "--to", filepath.Join(f.dir, "no", "x.db")}, 1,
			`gpuacct: migrate: destination: open store "TMP/no/x.db": directory: stat TMP/no: no such file or directory`},
		{"destination holds a ledger", []string{"migrate", "--to", other}, 1,
			`gpuacct: migrate: copy ledger: destination "TMP/other.db" already holds a ledger (table passes has rows) that is not a copy of "TMP/acct.db": migrate into an empty database or file`},
		{"verify differs", []string{"migrate", "--to", other, "--verify-only"}, 1,
			`gpuacct: migrate: verify copy of "TMP/acct.db" in "TMP/other.db": nodes has 2 rows in the source, 0 in the destination; nodes: row id=1 is in the source only; jobs has 1 rows in the source, 0 in the destination; jobs: sum(alloc_gpu_s) is 28800 in the source, 0 in the destination; jobs: row id=1 is in the source only; job_nodes has 2 rows in the source, 0 in the destination; job_nodes: row job=1, node_id=1 is in the source only; job_hours has 4 rows in the source, 0 in the destination; job_hours: sum(alloc_gpu_s) is 28800 in the source, 0 in the destination; job_hours: row job=1, node_id=1, hour=492343 is in the source only; rollup_hourly has 4 rows in the source, 0 in the destination; rollup_hourly: sum(alloc_gpu_s) is 28800 in the source, 0 in the destination; rollup_hourly: row hour=492343, cluster="c1", user="alice", account="physics", partition="gpu", node_id=1, model="", ignored=0 is in the source only; rollup_hourly_sum has 2 rows in the source, 0 in the destination; rollup_hourly_sum: sum(alloc_gpu_s) is 28800 in the source, 0 in the destination; rollup_hourly_sum: row hour=492343, cluster="c1", user="alice", account="physics", partition="gpu", model="", ignored=0 is in the source only; rollup_daily has 1 rows in the source, 0 in the destination; rollup_daily: sum(alloc_gpu_s) is 28800 in the source, 0 in the destination; rollup_daily: row day=20514, cluster="c1", user="alice", account="physics", partition="gpu", model="", ignored=0 is in the source only; rollup_monthly has 1 rows in the source, 0 in the destination; rollup_monthly: sum(alloc_gpu_s) is 28800 in the source, 0 in the destination; rollup_monthly: row month=20513, cluster="c1", user="alice", account="physics", partition="gpu", model="", ignored=0 is in the source only; rollup_node_hour has 4 rows in the source, 0 in the destination; rollup_node_hour: sum(alloc_gpu_s) is 28800 in the source, 0 in the destination; rollup_node_hour: row hour=492343, cluster="c1", partition="gpu", node_id=1, model="", ignored=0 is in the source only; rollup_node_day has 2 rows in the source, 0 in the destination; rollup_node_day: sum(alloc_gpu_s) is 28800 in the source, 0 in the destination; rollup_node_day: row day=20514, cluster="c1", partition="gpu", node_id=1, model="", ignored=0 is in the source only; rollup_node_month has 2 rows in the source, 0 in the destination; rollup_node_month: sum(alloc_gpu_s) is 28800 in the source, 0 in the destination; rollup_node_month: row month=20513, cluster="c1", partition="gpu", node_id=1, model="", ignored=0 is in the source only; rollup_model_hour has 2 rows in the source, 0 in the destination; rollup_model_hour: sum(alloc_gpu_s) is 28800 in the source, 0 in the destination; rollup_model_hour: row hour=492343, cluster="c1", partition="gpu", model="", ignored=0 is in the source only; passes: row id=1 differs: finished=1772445601 ok=1 files=2 records=4 in the source, finished=1772445600 ok=0 files=0 records=0 in the destination`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := f.run(t, tc.args...)
			errs = strings.ReplaceAll(errs, f.dir, "TMP")
			if code != tc.code || errs != tc.want+"\n" {
				t.Errorf("exit %d, stderr %q; want exit %d, stderr %q", code, errs, tc.code, tc.want+"\n")
			}
			if out != "" {
				t.Errorf("stdout %q, want none", out)
			}
		})
	}
}

// TestMigrateSourceWriterRuns: while a writer holds the source's lock,
// a copy and a verification refuse in one line saying to stop it, and
// leave the destination as it was.
func TestMigrateSourceWriterRuns(t *testing.T) {
	f := newFixture(t)
	w, err := store.Open(context.Background(), store.Options{Path: f.db})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	to := filepath.Join(f.dir, "copy.db")
	for _, args := range [][]string{{"migrate", "--to", to}, {"migrate", "--to", to, "--verify-only"}} {
		code, out, errs := f.run(t, args...)
		errs = strings.ReplaceAll(errs, f.dir, "TMP")
		if code != 1 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, `source "TMP/acct.db" is being written (pid `) ||
			!strings.HasSuffix(errs, "stop gpuacct serve/ingest on the source first: store is locked by another writer\n") {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 and one line saying to stop serve/ingest", args, code, errs)
		}
		if out != "" {
			t.Errorf("%v: stdout %q, want none", args, out)
		}
	}
	if n := ledgerdb.Scalar[int64](t, to, `SELECT count(*) FROM meta WHERE key LIKE 'migrate.%'`); n != 0 {
		t.Errorf("a refused copy marked the destination (%d migrate keys)", n)
	}
}

// TestPostgresMigrate copies the fixture into PostgreSQL with a URL that
// carries a password, verifies it, and fails on a database that does not
// exist: the password shows nowhere.
func TestPostgresMigrate(t *testing.T) {
	f := newFixture(t)
	dst := ledgerdb.NewPostgresDB(t)
	u, err := url.Parse(dst)
	if err != nil {
		t.Fatal(err)
	}
	pw, ok := u.User.Password()
	if !ok || pw == "" {
		// The secret must be there to be hidden.
		u.User = url.UserPassword(u.User.Username(), "not-the-password")
		pw = "not-the-password"
	}
	// The server may not ask for it; the command must hide it all the same.
	dst = u.String()
	missing := *u
	missing.Path = "/no_such_database_here"
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"copy", []string{"migrate", "--to", dst}, 0, "row counts and totals agree"},
		{"verify", []string{"migrate", "--to", dst, "--verify-only"}, 0, "nothing copied"},
		{"missing database", []string{"migrate", "--to", missing.String()}, 1, `no_such_database_here`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := f.run(t, tc.args...)
			t.Logf("stdout:\n%sstderr:\n%s", out, errs)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, errs)
			}
			if !strings.Contains(out+errs, tc.want) {
				t.Errorf("output says nothing of %q:\n%s%s", tc.want, out, errs)
			}
			if strings.Contains(out+errs, pw) {
				t.Errorf("the password is printed:\n%s%s", out, errs)
			}
			if code != 0 && strings.Count(errs, "\n") != 1 {
				t.Errorf("a failure says more than one line:\n%s", errs)
			}
		})
	}
	t.Run("source from the configuration", func(t *testing.T) {
		if err := os.WriteFile(f.cfg, []byte("[store]\nurl = \""+missing.String()+"\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errs := f.run(t, "migrate", "--to", filepath.Join(f.dir, "back.db"))
		if code != 1 || !strings.Contains(errs, `migrate: source: open store "postgres://`+u.User.Username()+`:xxxxx@`) {
			t.Errorf("exit %d, stderr %q: want exit 1 naming the configured source without its password", code, errs)
		}
		if strings.Contains(out+errs, pw) {
			t.Errorf("the password is printed:\n%s%s", out, errs)
		}
	})
}
