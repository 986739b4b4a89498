package requests

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/testkit"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// job adds run 0 of job id on cluster c with comment and returns its row.
func (e *queueEnv) job(t *testing.T, id uint64, comment string) int64 {
	t.Helper()
	b, err := e.st.Begin(context.Background(), e.now)
	if err != nil {
		t.Fatal(err)
	}
	row, err := b.Job("c", id, 0)
	if err != nil {
		b.Rollback()
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	ledgerdb.Exec(t, e.loc, `UPDATE jobs SET comment = ? WHERE id = ?`, comment, row)
	return row
}

// ignored reads whether job row is ignored.
func (e *queueEnv) ignored(t *testing.T, row int64) bool {
	t.Helper()
	return ledgerdb.Scalar[int64](t, e.loc, `SELECT ignored FROM jobs WHERE id = ?`, row) != 0
}

// fileIgnore files an ignore or unignore of job 7 on cluster c as root;
// it returns the request's file name.
func (e *queueEnv) fileIgnore(t *testing.T, action string) string {
	t.Helper()
	e.now = e.now.Add(time.Second)
	r := &Request{Action: action, Jobs: []string{"7"}, Cluster: "c", Reason: "r", By: "root", UID: 0, Time: e.now}
	if _, err := Submit(e.dir, r); err != nil {
		t.Fatal(err)
	}
	return r.ID + ".json"
}

func (e *queueEnv) applyTagged(t *testing.T) {
	t.Helper()
	if _, err := Apply(context.Background(), e.st, Options{Dir: e.dir, Now: e.now, Cluster: "c", Tag: "gpuacct:ignore",
		Trusted: func(uid int) bool { return uid == 0 }}); err != nil {
		t.Fatal(err)
	}
}

// A request the writer applied but could not remove (a pending/ left
// root's by `sudo gpuacct ignore`) was applied again on every pass: an
// ignore left there undid each later unignore, pass after pass. Its key
// in the ledger applies it once.
func TestApplyIgnoreOnce(t *testing.T) {
	e := newQueueEnv(t)
	row := e.job(t, 7, "")
	name := e.fileIgnore(t, Ignore)
	data, err := os.ReadFile(filepath.Join(pendingDir(e.dir), name))
	if err != nil {
		t.Fatal(err)
	}
	e.applyTagged(t)
	if !e.ignored(t, row) {
		t.Fatal("ignore not applied")
	}
	outcome := filepath.Join(appliedDir(e.dir), name)
	before, err := os.ReadFile(outcome)
	if err != nil {
		t.Fatal(err)
	}
	e.fileIgnore(t, Unignore)
	e.applyTagged(t)
	if e.ignored(t, row) {
		t.Fatal("unignore not applied")
	}
	// The ignore is back in pending/, as one the writer could not remove
	// would be.
	if err := os.WriteFile(filepath.Join(pendingDir(e.dir), name), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for pass := range 2 {
		e.now = e.now.Add(time.Minute)
		e.applyTagged(t)
		if e.ignored(t, row) {
			t.Fatalf("pass %d applied the ignore again over the later unignore", pass)
		}
	}
	if _, err := os.Stat(filepath.Join(pendingDir(e.dir), name)); !os.IsNotExist(err) {
		t.Errorf("request applied before still pending: %v", err)
	}
	after, err := os.ReadFile(outcome)
	if err != nil || string(after) != string(before) {
		t.Errorf("outcome of the request applied before rewritten: %v\n%s", err, after)
	}
}

// An unignore held only while the writer found it among the first
// 10,000 names of applied/: past them, the next pass ignored the tagged
// job again. The ledger keeps each run's last explicit decision; and
// applied/ is pruned by age and count.
func TestApplyUnignoreHoldsPastManyOutcomes(t *testing.T) {
	e := newQueueEnv(t)
	row := e.job(t, 7, "bench run gpuacct:ignore")
	e.applyTagged(t)
	if !e.ignored(t, row) {
		t.Fatal("tagged job not ignored")
	}
	unignore := e.fileIgnore(t, Unignore)
	e.applyTagged(t)
	if e.ignored(t, row) {
		t.Fatal("unignore not applied")
	}
	// 12,000 later outcomes, named to sort and list before the unignore's.
	applied := appliedDir(e.dir)
	data, err := json.Marshal(Request{Schema: Schema, Action: Ignore, Jobs: []string{"1"}, UID: 0})
	if err != nil {
		t.Fatal(err)
	}
	const many = 12_000
	for i := range many {
		p := filepath.Join(applied, "0-"+strconv.Itoa(i)+".json")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, e.now, e.now); err != nil {
			t.Fatal(err)
		}
	}
	for pass := range 2 {
		e.now = e.now.Add(time.Minute)
		e.applyTagged(t)
		if e.ignored(t, row) {
			t.Fatalf("pass %d: the tag ignored the job again over its unignore", pass)
		}
	}
	// Whether a listing reaches the unignore's outcome depends on the
	// directory's order; without the outcome at all the decision holds.
	if err := os.Remove(filepath.Join(applied, unignore)); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	e.applyTagged(t)
	if e.ignored(t, row) {
		t.Fatal("without the unignore's outcome in applied/, the tag ignored the job again")
	}
	if n := len(dirNames(t, applied)); n > MaxIgnoreOutcomes {
		t.Errorf("applied/ keeps %d outcomes, want at most %d", n, MaxIgnoreOutcomes)
	}
	// Past IgnoreAppliedKeep every outcome goes; the decision stays.
	e.now = e.now.Add(IgnoreAppliedKeep + time.Hour)
	e.applyTagged(t)
	if n := len(dirNames(t, applied)); n != 0 {
		t.Errorf("applied/ keeps %d outcomes older than %v", n, IgnoreAppliedKeep)
	}
	if e.ignored(t, row) {
		t.Error("pruning the outcomes undid the unignore")
	}
}

// A request is applied to the cluster it names, when the ledger knows
// it, and refused with a reason when not: the writer kept every note
// under its own cluster.name, so a note filed from cluster blue on a
// shared ledger was stored under the writer's cluster, and a note filed
// under a cluster.name its agents do not use was kept yet shown nowhere.
func TestApplyRequestCluster(t *testing.T) {
	e := newQueueEnv(t)
	b, err := e.st.Begin(context.Background(), e.now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Node("blue", "gpu05"); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	until := e.now.Add(time.Hour)
	blue := add("gpu05", nil, until, "blue's booking")
	blue.Cluster = "blue"
	onBlue := e.submit(t, blue, 1000)
	wrong := add("gpu01", nil, until, "filed under the default cluster.name")
	wrong.Cluster = "cluster"
	onWrong := e.submit(t, wrong, 1000)
	e.job(t, 7, "")
	r := &Request{Action: Ignore, Jobs: []string{"7"}, Cluster: "cluster", Reason: "r", By: "root", UID: 0, Time: e.now}
	if _, err := Submit(e.dir, r); err != nil {
		t.Fatal(err)
	}
	e.apply(t) // the writer's cluster.name is "c"
	if got := e.outcome(t, onBlue, 1000); got.Error != "" {
		t.Fatalf("blue's note: %+v", got)
	}
	notes, err := e.st.Notes(context.Background(), e.now, false)
	if err != nil || len(notes) != 1 || notes[0].Cluster != "blue" {
		t.Errorf("notes in force %+v (%v), want blue's alone, kept for blue", notes, err)
	}
	want := `refused: node gpu01 is on cluster c, not on "cluster", the note's (cluster.name): no board of "cluster" shows it; set cluster.name to the agents' cluster`
	if got := e.outcome(t, onWrong, 1000).Error; got != want {
		t.Errorf("note of a cluster without the node: %q, want %q", got, want)
	}
	out, err := IgnoreOutcome(e.dir, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := `refused: no cluster "cluster" in the ledger: name a cluster it has (gpuacct ignore -M)`; out.Error != want {
		t.Errorf("ignore of an unknown cluster: %q, want %q", out.Error, want)
	}
}

// MakeQueues gives both queues to the service user, repairing ones a
// root command made before (root:root 0755 pending/, which serve could
// not empty); Submit makes no queue, so whoever files first owns none.
func TestMakeQueuesOwner(t *testing.T) {
	testkit.NeedRoot(t, "give the queues to another user (chown)")
	dir := filepath.Join(t.TempDir(), "requests")
	r := &Request{Action: Ignore, Jobs: []string{"7"}, Reason: "r", By: "root", Time: time.Now()}
	if _, err := Submit(dir, r); err == nil {
		t.Fatal("Submit made a queue that was not there")
	}
	if err := os.MkdirAll(pendingDir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := MakeQueues(dir, 4321); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, pendingDir(dir), appliedDir(dir), NotesDir(dir), pendingDir(NotesDir(dir)), appliedDir(NotesDir(dir))} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if got := ownerOf(fi); got != 4321 {
			t.Errorf("%s owned by uid %d, want the service user's 4321", d, got)
		}
	}
}

// A ledger from before jobs.ignore_request holds no decision: the
// unignores of the applied/ log are taken into it once, so that the
// first pass after the upgrade does not ignore an unignored tagged job
// again.
func TestApplyImportsLoggedDecisions(t *testing.T) {
	e := newQueueEnv(t)
	row := e.job(t, 7, "bench run gpuacct:ignore")
	other := e.job(t, 8, "gpuacct:ignore")
	if err := os.MkdirAll(appliedDir(e.dir), 0o755); err != nil {
		t.Fatal(err)
	}
	at := e.now.Add(-time.Hour)
	for _, r := range []Request{
		{Schema: Schema, ID: "20260302T090000Z-000000-1-aa", Action: Ignore, Jobs: []string{"7"}, Cluster: "c", Changed: []string{"7"}, Time: at, AppliedAt: &at},
		{Schema: Schema, ID: "20260302T090001Z-000001-1-bb", Action: Unignore, Jobs: []string{"7"}, Cluster: "c", Changed: []string{"7"}, Time: at, AppliedAt: &at},
	} {
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(appliedDir(e.dir), r.ID+".json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.applyTagged(t)
	if e.ignored(t, row) {
		t.Error("the tag ignored job 7, which a logged unignore kept counted")
	}
	if !e.ignored(t, other) {
		t.Error("the tag did not ignore job 8, which no request decided")
	}
	if got := ledgerdb.Scalar[string](t, e.loc, `SELECT ignore_request FROM jobs WHERE id = ?`, row); got != "request/ignore/20260302T090001Z-000001-1-bb.json" {
		t.Errorf("job 7's decision %q, want the unignore's", got)
	}
}

// A request larger than the writer reads is not filed: it would only be
// refused.
func TestSubmitTooLarge(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "requests")
	if err := MakeQueues(dir, -1); err != nil {
		t.Fatal(err)
	}
	var jobs []string
	for i := range MaxJobs {
		jobs = append(jobs, "9223372036854775807_9223372036854775807+"+strconv.Itoa(2147483000+i))
	}
	r := &Request{Action: Ignore, Jobs: jobs, Reason: string(make([]byte, MaxReasonBytes)), By: "root", Time: time.Now()}
	_, err := Submit(dir, r)
	if err == nil || !strings.Contains(err.Error(), "more than the 65536 the writer reads") {
		t.Fatalf("Submit of a request past %d bytes: %v", MaxRequestBytes, err)
	}
	if ents, _ := os.ReadDir(pendingDir(dir)); len(ents) != 0 {
		t.Errorf("filed %d file(s)", len(ents))
	}
}
