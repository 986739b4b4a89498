package requests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/store"
)

// TestNotifyOptOutThroughQueue: a notify-off filed into the open queue
// opts the file's owner out of the rule, whatever name the file says;
// notify-on takes it back; a bad rule, another kind's schema or an owner
// without a name is refused with the reason kept as the outcome.
func TestNotifyOptOutThroughQueue(t *testing.T) {
	e := newQueueEnv(t)
	ctx := context.Background()
	optOuts := func(user string) []string {
		t.Helper()
		got, err := e.st.NotifyOptOuts(ctx, user)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// By says bob: the writer keeps the opt-out for the file's owner.
	off := e.submit(t, &Request{Action: NotifyOff, Rule: "idle", By: "bob", UID: 1002}, 1000)
	all := e.submit(t, &Request{Action: NotifyOff, Rule: "all", By: "user1000"}, 1000)
	bad := e.submit(t, &Request{Action: NotifyOff, Rule: "sometimes", By: "user1000"}, 1000)
	noName := e.submit(t, &Request{Action: NotifyOff, Rule: "idle"}, 1001)
	e.apply(t)
	if d := cmp.Diff([]string{"all", "idle"}, optOuts("user1000")); d != "" {
		t.Errorf("user1000's opt-outs (-want +got):\n%s", d)
	}
	if got := optOuts("bob"); len(got) != 0 {
		t.Errorf("bob opted out by another's file: %v", got)
	}
	for _, tc := range []struct {
		name, id string
		owner    int
		err      string
	}{
		{"off", off, 1000, ""},
		{"all", all, 1000, ""},
		{"bad rule", bad, 1000, `refused: --rule "sometimes" is not a rule (rules: idle, digest, jobend, all)`},
		{"no user name", noName, 1001, "refused: uid 1001 has no user name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := NotifyOutcome(e.dir, tc.id, tc.owner)
			if err != nil {
				t.Fatal(err)
			}
			if out.Error != tc.err || out.AppliedAt == nil {
				t.Errorf("outcome error %q applied %v, want %q", out.Error, out.AppliedAt, tc.err)
			}
		})
	}
	on := e.submit(t, &Request{Action: NotifyOn, Rule: "idle"}, 1000)
	e.apply(t)
	if d := cmp.Diff([]string{"all"}, optOuts("user1000")); d != "" {
		t.Errorf("after notify on (-want +got):\n%s", d)
	}
	if out, err := NotifyOutcome(e.dir, on, 1000); err != nil || out.Error != "" || out.By != "user1000" {
		t.Errorf("notify on outcome %+v, %v", out, err)
	}
	// A note request's schema in the notify queue is refused, not applied.
	path := filepath.Join(pendingDir(NotifyDir(e.dir)), "x.json")
	if err := os.WriteFile(path, []byte(`{"schema":"gpusuite.note/v1","action":"notify-off","rule":"digest","by":"","uid":0,"time":"2026-03-02T10:00:00Z"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	e.apply(t)
	if out, err := NotifyOutcome(e.dir, "x", 1000); err != nil || !strings.Contains(out.Error, "schema") {
		t.Errorf("wrong schema: outcome %+v, %v", out, err)
	}
	if d := cmp.Diff([]string{"all"}, optOuts("user1000")); d != "" {
		t.Errorf("after a refused request (-want +got):\n%s", d)
	}
}

// TestNotifyRecordTrusted: a record of a job-end mail is kept from root
// (slurmctld's MailProg); from another user it is refused, for a queued
// record is a mail the writer would send to whom it says; a key of
// another rule is refused from anyone.
func TestNotifyRecordTrusted(t *testing.T) {
	e := newQueueEnv(t)
	ctx := context.Background()
	job := int64(7)
	msg := func(key, to string) *Message {
		return &Message{Key: key, Recipient: to, Cluster: "c", Job: &job, User: "alice", Subject: "Slurm Job_id=7 Ended", Body: "b", Error: "421 try later"}
	}
	for _, tc := range []struct {
		name  string
		m     *Message
		owner int
		err   string
	}{
		{"root", msg("jobend:c:7+0:Ended:to:alice", "alice@example.org"), 0, ""},
		{"a user", msg("jobend:c:7+0:Ended:to:victim", "victim@example.org"), 1000, "refused: owned by uid 1000, not root or the service user"},
		{"another rule", msg("idle:c:7+0:user:alice", "alice@example.org"), 0, `refused: key "idle:c:7+0:user:alice" is no job-end mail's`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := e.submit(t, &Request{Action: NotifyRecord, Message: tc.m}, tc.owner)
			e.apply(t)
			out, err := NotifyOutcome(e.dir, id, tc.owner)
			if err != nil || out.Error != tc.err {
				t.Errorf("outcome error %q, %v; want %q", out.Error, err, tc.err)
			}
		})
	}
	msgs, err := e.st.NotifyMessages(ctx, store.NotifyQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].Recipient != "alice@example.org" || msgs[0].State != store.NotifyQueued || msgs[0].LastError != "421 try later" {
		t.Errorf("outbox %+v, want root's record alone, queued with its error", msgs)
	}
}
