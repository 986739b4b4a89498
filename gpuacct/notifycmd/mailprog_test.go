package notifycmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/requests"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	smtpsink "github.com/aicloud/gpusuite/test/smtp"
)

// slurmSubject is what slurmctld gives as the subject of job 1's end.
const slurmSubject = "Slurm Job_id=1 Name=train Ended, Run time 03:00:00, COMPLETED, ExitCode 0"

// mailprog runs gpuacct mailprog ARGS with Slurm's environment for
// alice's job 1 (mail type typ) and stdin body, as root; it returns the
// exit code, stdout and stderr.
func (f *fixture) mailprog(t testing.TB, typ, body string, args ...string) (int, string, string) {
	t.Helper()
	env := map[string]string{"GPUSUITE_CONFIG": f.cfg, "SLURM_JOB_ID": "1", "SLURM_CLUSTER_NAME": "c", "SLURM_JOB_USER": "alice",
		"SLURM_JOB_MAIL_TYPE": typ, "SLURM_JOB_STATE": "COMPLETED"}
	var out, errb bytes.Buffer
	d := Deps{Stdin: strings.NewReader(body), Stdout: &out, Stderr: &errb, Now: func() time.Time { return now },
		Getenv: func(k string) string { return env[k] }, Caller: func() (int, string) { return 0, "root" }}
	app := &cli.App{Name: "gpuacct", Writer: &out, ErrWriter: &errb, Flags: []cli.Flag{cliwire.ConfigFlag()}, Commands: []*cli.Command{MailProgCommand(d)}}
	cliwire.Prepare(app)
	err := app.Run(cliwire.Reorder(app, append([]string{"gpuacct", "mailprog"}, args...)))
	return cliwire.Finish("gpuacct", &errb, err), out.String(), errb.String()
}

// end makes job 1 ended at now with its figures: 3 GPU-h allocated, a
// quarter used, half idle, 0.5 kWh.
func (f *fixture) end(t testing.TB) {
	t.Helper()
	ledgerdb.Tx(t, f.db.Loc(), func(exec func(q string, args ...any)) {
		exec(`UPDATE jobs SET end = ?, state = 'completed', alloc_gpu_s = 10800, used_gpu_s = 2700, idle_gpu_s = 5400, energy_mj = 1800000000 WHERE id = 1`, now.Unix())
		exec(`INSERT INTO job_hours (job, node_id, hour, alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, jobs) VALUES (1, 1, ?, 10800, 2700, 5400, 10800, 1)`, t0.Unix())
	})
}

// TestMailProgSummary: Slurm's end mail goes to alice's address with
// Slurm's subject and body and the job's GPU summary appended, and is
// recorded in the outbox (rule jobend, sent) once the writer applies the
// queue; a Began mail keeps Slurm's text alone.
func TestMailProgSummary(t *testing.T) {
	f := newFixture(t, "")
	f.end(t)
	reqs := filepath.Join(t.TempDir(), "requests")
	to := "alice-" + f.stamp + "@example.org"
	code, out, errs := f.mailprog(t, "Ended", "Slurm's own words\n", "-s", slurmSubject, "alice", "--requests", reqs, "--wait", "30s")
	if code != 0 || out != "" || errs != "" {
		t.Fatalf("exit %d, %q %q", code, out, errs)
	}
	got := f.sink.To(t, to, 1)
	if len(got) != 1 || got[0].Subject != slurmSubject {
		t.Fatalf("messages %+v, want Slurm's subject", got)
	}
	want := "Slurm's own words\n\n-- gpusuite: the GPUs of job 1 (cluster c) --\nGPUs:         1\nElapsed:      3 h\n" +
		"GPU-hours:    3.00 GPU-h allocated\nUtilization:  25.0 % (GPU time used / allocated)\nIdle:         50.0 % of the GPU time (1.50 GPU-h)\n" +
		"Energy:       0.500 kWh\nDetails:      gpuacct job 1\n"
	if got[0].Body != want {
		t.Errorf("body\n%s\nwant\n%s", got[0].Body, want)
	}

	code, _, errs = f.mailprog(t, "Began", "", "-s", "Slurm Job_id=1 Name=train Began", "alice", "--requests", reqs)
	if code != 0 || errs != "" {
		t.Fatalf("began: exit %d, %q", code, errs)
	}
	if got := f.sink.To(t, to, 2); len(got) != 2 || got[1].Body != "" {
		t.Errorf("began mail %+v, want Slurm's plain (empty) message", got)
	}

	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Path: f.db.Path, URL: f.db.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := requests.Apply(ctx, st, requests.Options{Dir: reqs, Now: now, Trusted: func(uid int) bool { return uid == 0 }}); err != nil {
		t.Fatal(err)
	}
	j := int64(1)
	msgs, err := st.NotifyMessages(ctx, store.NotifyQuery{Job: &j})
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string]string{}
	for _, m := range msgs {
		if m.Rule != "jobend" || m.State != store.NotifySent || m.Recipient != to {
			t.Errorf("outbox message %+v, want rule jobend sent to %s", m, to)
		}
		bodies[m.Key] = m.Body
	}
	if d := cmp.Diff(map[string]string{"jobend:c:1+0:Ended:to:alice": want, "jobend:c:1+0:Began:to:alice": ""}, bodies); d != "" {
		t.Errorf("outbox bodies by key (-want +got):\n%s", d)
	}
}

// TestMailProgLockedLedger: a ledger held locked leaves Slurm's plain
// message, sent within the wait's bound.
func TestMailProgLockedLedger(t *testing.T) {
	f := newFixture(t, "")
	f.end(t)
	ledgerdb.Lock(t, f.db.Loc())
	to := "alice-" + f.stamp + "@example.org"
	const wait = 2 * time.Second
	start := time.Now()
	code, _, errs := f.mailprog(t, "Ended", "", "-s", slurmSubject, "alice", "--requests", filepath.Join(t.TempDir(), "r"), "--wait", wait.String())
	took := time.Since(start)
	if code != 0 || !strings.Contains(errs, "no GPU summary") {
		t.Fatalf("exit %d, stderr %q; want 0 and the missing summary said", code, errs)
	}
	got := f.sink.To(t, to, 1)
	if len(got) != 1 || got[0].Subject != slurmSubject || got[0].Body != "" {
		t.Errorf("messages %+v, want Slurm's plain message", got)
	}
	// Generous: the bound is the wait, the rest is a slow machine.
	if took > 10*wait {
		t.Errorf("took %s with --wait %s", took, wait)
	}
}

// TestMailProgBadUse: bad arguments are one line, exit 2.
func TestMailProgBadUse(t *testing.T) {
	f := newFixture(t, "")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no subject", []string{"alice"}, "give -s SUBJECT RECIPIENT"},
		{"no recipient", []string{"-s", "x"}, "give one RECIPIENT after -s SUBJECT, got 0 arguments"},
		{"two recipients", []string{"-s", "x", "alice", "bob"}, "got 2 arguments"},
		{"wait too long", []string{"-s", "x", "alice", "--wait", "2h"}, "--wait 2h0m0s is outside 0s..1m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := f.mailprog(t, "Ended", "", tc.args...)
			if code != 2 || out != "" || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and one line saying %s", code, out, errs, tc.want)
			}
		})
	}
}

// TestMailProgServerDown: a mail server down when Slurm mails leaves the
// mail queued in the outbox, never lost: the notifier's pass sends it,
// once, when the server is back.
func TestMailProgServerDown(t *testing.T) {
	f := newFixture(t, "")
	f.end(t)
	addr := smtpsink.FreeAddr(t)
	_, port, _ := strings.Cut(addr, ":")
	_, oldPort, _ := strings.Cut(f.sink.Addr, ":")
	data, err := os.ReadFile(f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.cfg, []byte(strings.Replace(string(data), "port = "+oldPort, "port = "+port, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	reqs := filepath.Join(t.TempDir(), "requests")
	code, _, errs := f.mailprog(t, "Ended", "", "-s", slurmSubject, "alice", "--requests", reqs)
	if code != 0 || !strings.Contains(errs, "queued for gpuacct serve to send again") {
		t.Fatalf("exit %d, stderr %q; want 0, queued", code, errs)
	}
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Path: f.db.Path, URL: f.db.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := requests.Apply(ctx, st, requests.Options{Dir: reqs, Now: now, Trusted: func(uid int) bool { return uid == 0 }}); err != nil {
		t.Fatal(err)
	}
	q, err := st.NotifyQueueState(ctx)
	st.Close()
	if err != nil || q.Queued != 1 {
		t.Fatalf("queue %+v, %v; want the mail queued", q, err)
	}
	sink := smtpsink.Start(t, addr)
	// The idle rule is off: the pass only delivers.
	if err := os.WriteFile(f.cfg, append([]byte(strings.Replace(string(data), "port = "+oldPort, "port = "+port, 1)), "[notify.idle]\nenabled = false\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"1 sent", "0 sent"} {
		code, out, errs := f.run(t, 0, "root", "--once")
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("--once #%d: exit %d, %q %s; want %s", i+1, code, out, errs, want)
		}
	}
	got := sink.To(t, "alice-"+f.stamp+"@example.org", 1)
	if len(got) != 1 || got[0].Subject != slurmSubject || !strings.Contains(got[0].Body, "Utilization:  25.0 %") {
		t.Errorf("messages %+v, want Slurm's mail with the summary, once", got)
	}
}

// BenchmarkMailProg: what the summary adds to Slurm's mail. plain is a
// Began mail (Slurm's text alone), summary an Ended one whose job is in
// the ledger; both go through the mail server and file their record.
// go test -run - -bench MailProg ./gpuacct/notifycmd/
func BenchmarkMailProg(b *testing.B) {
	f := newFixture(b, "")
	f.end(b)
	reqs := filepath.Join(b.TempDir(), "requests")
	for _, tc := range []struct{ name, typ string }{{"plain", "Began"}, {"summary", "Ended"}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if code, _, errs := f.mailprog(b, tc.typ, "", "-s", slurmSubject, "alice", "--requests", reqs); code != 0 || errs != "" {
					b.Fatalf("exit %d: %s", code, errs)
				}
			}
		})
	}
}
