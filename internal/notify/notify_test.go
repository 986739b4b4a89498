package notify

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	smtpsink "github.com/aicloud/gpusuite/test/smtp"
)

var update = flag.Bool("update", false, "rewrite testdata's golden messages")

var t0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// fjob is a running (unless ended) job run for the fixture: its GPUs'
// 5-minute buckets from start to upTo, busy while busy(gpu, t).
type fjob struct {
	job                      int64
	user, account, partition string
	comment, qos             string // qos "": not looked up (NULL)
	gpus                     int
	start, end, upTo         time.Time
	busy                     func(gpu int, at time.Time) bool
}

func idleAll(int, time.Time) bool { return false }

// seed writes jobs as the writer would have kept them.
func seed(t testing.TB, loc string, jobs []fjob) {
	t.Helper()
	ledgerdb.Tx(t, loc, func(exec func(q string, args ...any)) {
		for _, j := range jobs {
			exec(`INSERT INTO nodes (id, cluster, name) VALUES (?, 'c', ?)`, j.job, fmt.Sprintf("gpu%02d", j.job))
			var end any
			if !j.end.IsZero() {
				end = j.end.Unix()
			}
			account, partition := j.account, j.partition
			if account == "" {
				account = "proj"
			}
			if partition == "" {
				partition = "gpu"
			}
			var qos any
			if j.qos != "" {
				qos = j.qos
			}
			exec(`INSERT INTO jobs (id, cluster, job_id, user, account, partition, gpus, start, end, comment, qos) VALUES (?, 'c', ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				j.job, j.job, j.user, account, partition, j.gpus, j.start.Unix(), end, j.comment, qos)
			for g := range j.gpus {
				id := j.job*100 + int64(g)
				exec(`INSERT INTO gpus (id, uuid, node_id, idx) VALUES (?, ?, ?, ?)`, id, fmt.Sprintf("GPU-%d-%d", j.job, g), j.job, g)
				exec(`INSERT INTO job_gpus (job, gpu_id, node_id) VALUES (?, ?, ?)`, j.job, id, j.job)
				for at := j.start.Truncate(5 * time.Minute); at.Before(j.upTo); at = at.Add(5 * time.Minute) {
					idle := 300_000
					if j.busy(g, at) {
						idle = 0
					}
					exec(`INSERT INTO series_buckets (gpu_id, job, restart, bucket_ms, n, first_ms, end_ms, window_ms, idle_ms, util_w_ms, util_ms, util_share_w_ms,
 power_w_ms, power_ms, energy_mj, energy_n) VALUES (?, ?, 0, ?, 30, ?, ?, 300000, ?, 0, 0, 0, 0, 0, 0, 0)`,
						id, j.job, at.UnixMilli(), at.UnixMilli(), at.Add(5*time.Minute).UnixMilli(), idle)
				}
			}
		}
	})
}

// ledger is a new writer's store on the engine under test and its
// location for seed.
func ledger(t testing.TB) (*store.Ledger, ledgerdb.Ledger) {
	t.Helper()
	l := ledgerdb.NewLedger(t)
	st, err := store.Open(context.Background(), store.Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, l
}

// testConfig is the notifier's config for tests: addresses made from the
// user name and stamp (unique on a shared sink), mail to addr.
func testConfig(t testing.TB, addr, stamp string) config.Notify {
	t.Helper()
	cfg := config.Default().Notify
	cfg.Enabled = true
	cfg.Mail.Address = "{user}-" + stamp + "@example.org"
	if addr != "" {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Mail.Host = host
		if cfg.Mail.Port, err = strconv.Atoi(port); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

func newNotifier(t testing.TB, cfg config.Notify, st *store.Ledger) *Notifier {
	t.Helper()
	n, err := New(cfg, st, Options{IdleThreshold: 1})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func stamp() string { return strconv.FormatInt(time.Now().UnixNano(), 36) }

// TestIdleRule: which running jobs the idle rule warns, and that it warns
// each once: not again on the next evaluation, nor after a restart (a
// new notifier on the same ledger).
func TestIdleRule(t *testing.T) {
	st, l := ledger(t)
	now := t0.Add(3 * time.Hour)
	busyBefore := func(until time.Time) func(int, time.Time) bool {
		return func(_ int, at time.Time) bool { return at.Before(until) }
	}
	seed(t, l.Loc(), []fjob{
		{job: 1, user: "alice", gpus: 4, start: t0, upTo: now, busy: func(g int, _ time.Time) bool { return g >= 2 }},
		{job: 2, user: "bob", gpus: 1, start: t0, upTo: now, busy: busyBefore(now.Add(-30 * time.Minute))},
		{job: 3, user: "carol", gpus: 1, start: t0, upTo: now, busy: busyBefore(t0.Add(time.Hour))},
		{job: 4, user: "dave", gpus: 1, start: now.Add(-40 * time.Minute), upTo: now, busy: idleAll},
		{job: 5, user: "erin", gpus: 1, start: t0, upTo: now.Add(-30 * time.Minute), busy: idleAll},
		{job: 6, user: "frank", gpus: 1, start: t0, end: now.Add(-time.Minute), upTo: now, busy: idleAll},
		{job: 7, user: "exempt", gpus: 1, start: t0, upTo: now, busy: idleAll},
		{job: 8, user: "gina", account: "bench", gpus: 1, start: t0, upTo: now, busy: idleAll},
		{job: 9, user: "hank", partition: "debug", gpus: 1, start: t0, upTo: now, busy: idleAll},
		{job: 10, user: "ivan", comment: "prep gpuacct:noidlemail", gpus: 1, start: t0, upTo: now, busy: idleAll},
		{job: 11, user: "judy", gpus: 1, start: t0, upTo: now, busy: idleAll},
		{job: 12, user: "kim", qos: "long", gpus: 1, start: t0, upTo: now, busy: idleAll},
	})
	notifyBatch(t, st, now, func(b *store.Batch) error { return b.SetNotifyOptOut("judy", "idle", true, now) })
	cfg := testConfig(t, "", "x")
	cfg.Idle.ExemptUsers, cfg.Idle.ExemptAccounts, cfg.Idle.ExemptPartitions = []string{"exempt"}, []string{"bench"}, []string{"debug"}
	cfg.Idle.ExemptQOS = []string{"long"}
	n := newNotifier(t, cfg, st)
	res, err := n.Evaluate(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	// alice: 2 of 4 idle since the start; carol: idle since 01:00. bob
	// was busy 30 min ago, erin's samples are stale; the rest are exempt
	// (kim by her job's QOS) or opted out. dave's job is younger than the
	// window and frank's ended: neither is looked at.
	if diff := cmp.Diff(Result{Jobs: 10, Found: 2, Added: 2}, res); diff != "" {
		t.Errorf("first evaluation (-want +got):\n%s", diff)
	}
	msgs, err := st.NotifyMessages(context.Background(), store.NotifyQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range msgs {
		got = append(got, m.Key+" "+m.Recipient+" "+m.Subject)
	}
	want := []string{
		"idle:c:1+0:user:alice alice-x@example.org [gpusuite] job 1 on c: 2 of 4 GPUs idle for 3 h",
		"idle:c:3+0:user:carol carol-x@example.org [gpusuite] job 3 on c: 1 of 1 GPU idle for 2 h",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	for name, n := range map[string]*Notifier{"again": n, "after a restart": newNotifier(t, cfg, st)} {
		t.Run(name, func(t *testing.T) {
			res, err := n.Evaluate(context.Background(), now.Add(10*time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if res.Found != 2 || res.Added != 0 {
				t.Errorf("found %d, added %d; want the 2 found, none added", res.Found, res.Added)
			}
		})
	}
}

func notifyBatch(t testing.TB, st *store.Ledger, now time.Time, f func(b *store.Batch) error) {
	t.Helper()
	b, err := st.Begin(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	if err := f(b); err != nil {
		b.Rollback()
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestGoldenMessages: the idle rule's message in each language.
func TestGoldenMessages(t *testing.T) {
	one := int64(0)
	three := int64(3)
	j := IdleJob{Cluster: "c", JobID: 4242, User: "alice", Account: "proj", Part: "gpu", GPUs: 4, Threshold: 1, IdleAfter: time.Hour,
		Idle: []IdleGPU{
			{Node: "gpu01", Index: &one, UUID: "GPU-a", Since: t0.Add(8 * time.Hour), For: 80 * time.Minute},
			{Node: "gpu01", Index: &three, UUID: "GPU-b", Since: t0.Add(7 * time.Hour), For: 140 * time.Minute},
		}}
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	for _, lang := range config.NotifyLanguages {
		t.Run(lang, func(t *testing.T) {
			subject, body := renderIdle(j, lang, tokyo)
			got := "Subject: " + subject + "\n\n" + body
			checkGolden(t, "idle."+lang+".golden", got)
		})
	}
}

// TestDeliverToSMTP: the decided messages reach a real SMTP server once,
// in the user's language, and are recorded sent; a user without an
// address is given up with the reason, not retried.
func TestDeliverToSMTP(t *testing.T) {
	sink := smtpsink.Shared(t)
	st, l := ledger(t)
	now := t0.Add(3 * time.Hour)
	seed(t, l.Loc(), []fjob{
		{job: 1, user: "alice", gpus: 2, start: t0, upTo: now, busy: idleAll},
		{job: 2, user: "bob", gpus: 1, start: t0, upTo: now, busy: idleAll},
		{job: 3, user: "nomail", gpus: 1, start: t0, upTo: now, busy: idleAll},
	})
	s := stamp()
	cfg := testConfig(t, sink.Addr, s)
	cfg.Languages = map[string]string{"bob": "ja"}
	n := newNotifier(t, cfg, st)
	n.addrs["nomail"] = "" // as if no address were known for the user
	res, err := n.Pass(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Result{Jobs: 3, Found: 3, Added: 3, Sent: 2, Failed: 1}, res); diff != "" {
		t.Errorf("pass (-want +got):\n%s", diff)
	}
	alice := sink.To(t, "alice-"+s+"@example.org", 1)
	bob := sink.To(t, "bob-"+s+"@example.org", 1)
	if len(alice) != 1 || len(bob) != 1 {
		t.Fatalf("%d messages to alice, %d to bob; want 1 each", len(alice), len(bob))
	}
	if !strings.Contains(alice[0].Body, "scancel 1\n") || !strings.Contains(alice[0].Subject, "2 of 2 GPUs idle for 3 h") {
		t.Errorf("alice's message: %q\n%s", alice[0].Subject, alice[0].Body)
	}
	if !strings.Contains(bob[0].Subject, "アイドル") || !strings.Contains(bob[0].Body, "scancel 2\n") {
		t.Errorf("bob's message is not in Japanese: %q\n%s", bob[0].Subject, bob[0].Body)
	}
	// Another pass sends nothing more.
	if res, err := n.Pass(context.Background(), now.Add(10*time.Minute)); err != nil || res.Sent+res.Added+res.Retry+res.Failed != 0 {
		t.Errorf("second pass %+v, %v; want nothing sent or added", res, err)
	}
	job := int64(3)
	ms, err := st.NotifyMessages(context.Background(), store.NotifyQuery{Job: &job})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].State != store.NotifyFailed || !strings.Contains(ms[0].LastError, "no mail address") {
		t.Errorf("nomail's message %+v, want failed for want of an address", ms)
	}
	// A delivery ends when the server has written the message: no wait.
	if got := len(sink.To(t, "alice-"+s+"@example.org", 0)); got != 1 {
		t.Errorf("%d messages to alice after two passes, want 1", got)
	}
}

// TestSMTPDownThenUp: a mail server down for a while leaves the message
// queued with a backoff; once it is up the message arrives, once.
func TestSMTPDownThenUp(t *testing.T) {
	addr := smtpsink.FreeAddr(t)
	st, l := ledger(t)
	now := t0.Add(3 * time.Hour)
	seed(t, l.Loc(), []fjob{{job: 1, user: "alice", gpus: 1, start: t0, upTo: now, busy: idleAll}})
	s := stamp()
	n := newNotifier(t, testConfig(t, addr, s), st)
	res, err := n.Pass(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	if res.Added != 1 || res.Retry != 1 {
		t.Fatalf("pass with the server down %+v, want 1 added, 1 retry", res)
	}
	ms, err := st.NotifyMessages(context.Background(), store.NotifyQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].State != store.NotifyQueued || ms[0].Attempts != 1 || ms[0].LastError == "" || !ms[0].NextAttempt.Equal(now.Add(time.Minute)) {
		t.Fatalf("message after a failure %+v, want queued, 1 attempt, the reason, due after retry_min", ms)
	}
	sink := smtpsink.Start(t, addr)
	// Not due yet: nothing is tried.
	if res, err := n.Pass(context.Background(), now.Add(30*time.Second)); err != nil || res.Sent+res.Retry != 0 {
		t.Fatalf("pass before the backoff %+v, %v; want nothing tried", res, err)
	}
	res, err = n.Pass(context.Background(), now.Add(time.Minute))
	if err != nil || res.Sent != 1 {
		t.Fatalf("pass with the server up %+v, %v; want 1 sent", res, err)
	}
	if res, err := n.Pass(context.Background(), now.Add(time.Hour)); err != nil || res.Sent != 0 {
		t.Fatalf("later pass %+v, %v; want nothing sent", res, err)
	}
	if got := sink.To(t, "alice-"+s+"@example.org", 0); len(got) != 1 {
		t.Errorf("%d messages arrived, want 1", len(got))
	}
}

// TestWebhookRetried: a webhook answering 500 gets the post again after
// the backoff and, once it answers 200, never again.
func TestWebhookRetried(t *testing.T) {
	var mu sync.Mutex
	codes := []int{500, 200}
	var posts int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		posts++
		code := 200
		if len(codes) > 0 {
			code, codes = codes[0], codes[1:]
		}
		w.WriteHeader(code)
	}))
	defer srv.Close()
	sink := smtpsink.Shared(t)
	st, l := ledger(t)
	now := t0.Add(3 * time.Hour)
	seed(t, l.Loc(), []fjob{{job: 1, user: "alice", gpus: 1, start: t0, upTo: now, busy: idleAll}})
	cfg := testConfig(t, sink.Addr, stamp())
	cfg.Webhooks = map[string]config.NotifyWebhook{"ops": {URL: srv.URL + "/hook", Format: "slack"}}
	cfg.Idle.Webhook = "ops"
	n := newNotifier(t, cfg, st)
	var got []Result
	for _, at := range []time.Duration{0, time.Minute, time.Hour} {
		res, err := n.Pass(context.Background(), now.Add(at))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, res)
	}
	// The owner's mail goes at once; the webhook's post fails, then is
	// delivered after retry_min. An hour later the samples are stale
	// (none written since): nothing is found, nothing sent.
	want := []Result{{Jobs: 1, Found: 2, Added: 2, Sent: 1, Retry: 1}, {Jobs: 1, Found: 2, Sent: 1}, {Jobs: 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("passes (-want +got):\n%s", diff)
	}
	mu.Lock()
	defer mu.Unlock()
	if posts != 2 {
		t.Errorf("%d posts, want 2 (a 500, then the delivery)", posts)
	}
}

// TestRateAndDryRun: past notify.rate_per_hour a recipient's mail waits,
// queued, its attempt not counted, and goes once the hour has passed; a
// dry run keeps and sends nothing.
func TestRateAndDryRun(t *testing.T) {
	sink := smtpsink.Shared(t)
	st, l := ledger(t)
	now := t0.Add(3 * time.Hour)
	seed(t, l.Loc(), []fjob{
		{job: 1, user: "alice", gpus: 1, start: t0, upTo: now.Add(2 * time.Hour), busy: idleAll},
		{job: 2, user: "alice", gpus: 1, start: t0, upTo: now.Add(2 * time.Hour), busy: idleAll},
	})
	s := stamp()
	cfg := testConfig(t, sink.Addr, s)
	cfg.DryRun = true
	if res, err := newNotifier(t, cfg, st).Pass(context.Background(), now); err != nil || res.Found != 2 || res.Added+res.Sent != 0 {
		t.Fatalf("dry run %+v, %v; want 2 found, none kept or sent", res, err)
	}
	cfg.DryRun, cfg.RatePerHour = false, 1
	n := newNotifier(t, cfg, st)
	var got []Result
	for _, at := range []time.Duration{0, time.Minute, 61 * time.Minute} {
		res, err := n.Pass(context.Background(), now.Add(at))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, res)
	}
	want := []Result{{Jobs: 2, Found: 2, Added: 2, Sent: 1}, {Jobs: 2, Found: 2}, {Jobs: 2, Found: 2, Sent: 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("passes (-want +got):\n%s", diff)
	}
	ms, err := st.NotifyMessages(context.Background(), store.NotifyQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.State != store.NotifySent || m.Attempts != 1 {
			t.Errorf("message %s: %s after %d attempts, want sent after 1", m.Key, m.State, m.Attempts)
		}
	}
	if got := sink.To(t, "alice-"+s+"@example.org", 0); len(got) != 2 {
		t.Errorf("%d messages to alice, want 2", len(got))
	}
}

// TestBackoff: retry_min doubled each attempt, never past retry_max.
func TestBackoff(t *testing.T) {
	cfg := config.Default().Notify
	cfg.RetryMin, cfg.RetryMax = config.Dur(time.Minute), config.Dur(10*time.Minute)
	n := &Notifier{cfg: cfg}
	var got []time.Duration
	for a := 1; a <= 6; a++ {
		got = append(got, n.backoff(a))
	}
	want := []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 10 * time.Minute, 10 * time.Minute}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("backoff (-want +got):\n%s", diff)
	}
}

// BenchmarkIdleRule evaluates the idle rule over 1,000 running jobs of 4
// GPUs that have run 12 hours, one GPU of each idle (none new after the
// first evaluation, as in a steady cluster).
func BenchmarkIdleRule(b *testing.B) {
	st, l := ledger(b)
	now := t0.Add(12 * time.Hour)
	var jobs []fjob
	for i := range 1000 {
		jobs = append(jobs, fjob{job: int64(i + 1), user: fmt.Sprintf("u%d", i%50), gpus: 4, start: t0, upTo: now,
			busy: func(g int, _ time.Time) bool { return g != 0 }})
	}
	seed(b, l.Loc(), jobs)
	n := newNotifier(b, testConfig(b, "", "bench"), st)
	if _, err := n.Evaluate(context.Background(), now); err != nil {
		b.Fatal(err)
	}
	var before, after syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &before); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		res, err := n.Evaluate(context.Background(), now)
		if err != nil || res.Found != 1000 {
			b.Fatalf("%+v, %v", res, err)
		}
	}
	b.StopTimer()
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &after); err != nil {
		b.Fatal(err)
	}
	// The issue bounds CPU, not wall time: the process's user and system
	// time per evaluation (SQLite runs in process).
	cpu := after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano()
	b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
}

// TestAddresses: the addresses file wins over the template; a bad line
// is refused with its number.
func TestAddresses(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, file, wantErr string
		want                []string // alice's, bob's
	}{
		{"template", "", "", []string{"alice@example.org", "bob@example.org"}},
		{"file wins", "# user address\nbob  Bob.Smith@example.com # moved\n", "", []string{"alice@example.org", "Bob.Smith@example.com"}},
		{"bad address", "bob bob@\n", "line 1", nil},
		{"bad line", "\n\nbob\n", "line 3", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default().Notify
			cfg.Mail.Address = "{user}@example.org"
			if tc.file != "" {
				cfg.Mail.AddressesFile = filepath.Join(dir, tc.name)
				if err := os.WriteFile(cfg.Mail.AddressesFile, []byte(tc.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			n, err := New(cfg, nil, Options{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, []string{n.address("alice"), n.address("bob")}); diff != "" {
				t.Errorf("addresses (-want +got):\n%s", diff)
			}
		})
	}
}

// checkGolden compares got with testdata/name, which -update rewrites.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}
