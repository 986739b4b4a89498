package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var notifyT0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// notifyBatch runs f in one committed batch of s at now.
func notifyBatch(t *testing.T, s *Ledger, now time.Time, f func(b *Batch)) {
	t.Helper()
	b, err := s.Begin(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	f(b)
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
}

func notifyMsg(key, user string, job int64) NotifyMessage {
	return NotifyMessage{Key: key, Rule: "idle", Recipient: user + "@example.org", Channel: "mail", Language: "ja", Cluster: "c",
		Job: &job, User: user, Subject: "subject " + key, Body: "body " + key, Created: notifyT0}
}

// TestNotifyEnqueueOnce: a second enqueue of a key, in another batch as a
// restarted writer would make it, adds nothing and keeps the first
// message as it was, delivered or not.
func TestNotifyEnqueueOnce(t *testing.T) {
	s, l := openLedger(t)
	var first int64
	notifyBatch(t, s, notifyT0, func(b *Batch) {
		id, added, err := b.EnqueueNotify(notifyMsg("idle:c:7+0:alice", "alice", 7))
		if err != nil || !added {
			t.Fatalf("first enqueue: added %v, %v", added, err)
		}
		first = id
		id, added, err = b.EnqueueNotify(notifyMsg("idle:c:7+0:alice", "alice", 7))
		if err != nil || added || id != first {
			t.Fatalf("same batch again: id %d added %v, %v; want id %d not added", id, added, err, first)
		}
		if err := b.MarkNotifySent(first, notifyT0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	})
	// A restarted writer: a new store on the same ledger.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(context.Background(), Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	notifyBatch(t, s2, notifyT0.Add(time.Hour), func(b *Batch) {
		m := notifyMsg("idle:c:7+0:alice", "alice", 7)
		m.Body = "another body"
		id, added, err := b.EnqueueNotify(m)
		if err != nil || added || id != first {
			t.Fatalf("after a restart: id %d added %v, %v; want id %d not added", id, added, err, first)
		}
	})
	got, err := s2.NotifyMessages(context.Background(), NotifyQuery{})
	if err != nil {
		t.Fatal(err)
	}
	sent := notifyT0.Add(time.Minute)
	want := notifyMsg("idle:c:7+0:alice", "alice", 7)
	want.ID, want.State, want.NextAttempt, want.SentAt = first, NotifySent, notifyT0, &sent
	if diff := cmp.Diff([]NotifyMessage{want}, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

// TestNotifyClaimAndOutcomes: a claim takes only due queued messages,
// counts the attempt and leases them; a failure keeps one queued until
// its next attempt, a final failure gives it up with the reason.
func TestNotifyClaimAndOutcomes(t *testing.T) {
	s := openTemp(t)
	ids := map[string]int64{}
	notifyBatch(t, s, notifyT0, func(b *Batch) {
		for i, u := range []string{"alice", "bob", "carol"} {
			id, _, err := b.EnqueueNotify(notifyMsg(fmt.Sprintf("k%d", i), u, int64(10+i)))
			if err != nil {
				t.Fatal(err)
			}
			ids[u] = id
		}
	})
	claim := func(at time.Time) []string {
		var out []string
		notifyBatch(t, s, at, func(b *Batch) {
			ms, err := b.ClaimNotify(at, 10*time.Minute, 2)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				out = append(out, fmt.Sprintf("%s #%d", m.User, m.Attempts))
			}
		})
		return out
	}
	steps := []struct {
		name string
		at   time.Time
		do   func(b *Batch)
		want []string
	}{
		{"limit bounds a claim", notifyT0, nil, []string{"alice #1", "bob #1"}},
		{"leased ones wait", notifyT0.Add(time.Minute), nil, []string{"carol #1"}},
		{"lease over: tried again", notifyT0.Add(11 * time.Minute), func(b *Batch) {
			if err := b.MarkNotifySent(ids["carol"], notifyT0.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			if err := b.MarkNotifyFailed(ids["bob"], "dial tcp: connection refused", notifyT0.Add(time.Hour), false); err != nil {
				t.Fatal(err)
			}
		}, []string{"alice #2"}},
		{"failed one due at its next attempt", notifyT0.Add(time.Hour), func(b *Batch) {
			if err := b.MarkNotifyFailed(ids["alice"], "550 no such user", notifyT0.Add(time.Hour), true); err != nil {
				t.Fatal(err)
			}
		}, []string{"bob #2"}},
		{"sent and given up never come back", notifyT0.Add(48 * time.Hour), func(b *Batch) {
			if err := b.MarkNotifySent(ids["bob"], notifyT0.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}, nil},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.do != nil {
				notifyBatch(t, s, st.at, st.do)
			}
			if diff := cmp.Diff(st.want, claim(st.at)); diff != "" {
				t.Errorf("claimed (-want +got):\n%s", diff)
			}
		})
	}
	q, err := s.NotifyQueueState(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(NotifyQueue{Sent: 2, Failed: 1}, q); diff != "" {
		t.Errorf("queue (-want +got):\n%s", diff)
	}
	alice := int64(10)
	got, err := s.NotifyMessages(context.Background(), NotifyQuery{Cluster: "c", Job: &alice})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].State != NotifyFailed || got[0].LastError != "550 no such user" || got[0].Attempts != 2 {
		t.Errorf("alice's message %+v, want failed after 2 attempts with the reason", got)
	}
}

func TestNotifyListAndOptOut(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	notifyBatch(t, s, notifyT0, func(b *Batch) {
		for i, u := range []string{"alice", "bob", "alice"} {
			m := notifyMsg(fmt.Sprintf("k%d", i), u, int64(10+i))
			m.Created = notifyT0.Add(time.Duration(i) * time.Minute)
			if _, _, err := b.EnqueueNotify(m); err != nil {
				t.Fatal(err)
			}
		}
		for _, r := range []string{"idle", "digest", "idle"} {
			if err := b.SetNotifyOptOut("alice", r, true, notifyT0); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.SetNotifyOptOut("alice", "digest", false, notifyT0); err != nil {
			t.Fatal(err)
		}
	})
	job := int64(11)
	for _, tc := range []struct {
		name string
		q    NotifyQuery
		want []string
	}{
		{"all, newest first", NotifyQuery{}, []string{"k2", "k1", "k0"}},
		{"by user", NotifyQuery{User: "alice"}, []string{"k2", "k0"}},
		{"by job", NotifyQuery{Job: &job}, []string{"k1"}},
		{"other cluster", NotifyQuery{Cluster: "d"}, nil},
		{"limit", NotifyQuery{Limit: 1}, []string{"k2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms, err := s.NotifyMessages(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range ms {
				got = append(got, m.Key)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("keys (-want +got):\n%s", diff)
			}
		})
	}
	got, err := s.NotifyOptOuts(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"idle"}, got); diff != "" {
		t.Errorf("opt-outs (-want +got):\n%s", diff)
	}
}

// TestNotifyDeferAndSentSince: a deferred claim is not an attempt and
// waits until its time; sent messages are counted per recipient since a
// time (the rate limit).
func TestNotifyDeferAndSentSince(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	var ids []int64
	notifyBatch(t, s, notifyT0, func(b *Batch) {
		for i, u := range []string{"alice", "alice", "bob"} {
			id, _, err := b.EnqueueNotify(notifyMsg(fmt.Sprintf("k%d", i), u, int64(i)))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
	})
	notifyBatch(t, s, notifyT0, func(b *Batch) {
		if _, err := b.ClaimNotify(notifyT0, time.Minute, 10); err != nil {
			t.Fatal(err)
		}
		for i, at := range []time.Time{notifyT0.Add(-2 * time.Hour), notifyT0} {
			if err := b.MarkNotifySent(ids[i], at); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.DeferNotify(ids[2], "waiting: rate", notifyT0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	})
	got, err := s.NotifySentSince(ctx, notifyT0.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"alice@example.org": 1}, got); diff != "" {
		t.Errorf("sent since (-want +got):\n%s", diff)
	}
	ms, err := s.NotifyMessages(ctx, NotifyQuery{User: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].Attempts != 0 || ms[0].LastError != "waiting: rate" || !ms[0].NextAttempt.Equal(notifyT0.Add(time.Hour)) {
		t.Errorf("deferred message %+v, want no attempt counted, the reason, due in an hour", ms)
	}
}
