package store

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/aicloud/gpusuite/internal/testkit/poll"
)

// TestReplicaLag: a writer's ledger is no standby (SQLite, or a
// PostgreSQL primary); on PostgreSQL the same database read on the
// harness's streaming standby (GPUSUITE_TEST_PG_STANDBY,
// test/pg/harness.sh) is one, whose lag is 0 when it has replayed all it
// received and more while its replay waits.
func TestReplicaLag(t *testing.T) {
	s, l := openLedger(t)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	lag, standby, err := s.ReplicaLag(ctx)
	if err != nil || standby || lag != 0 {
		t.Fatalf("the writer's ledger: lag %v, standby %v, err %v; want 0, false, nil", lag, standby, err)
	}
	if l.URL == "" {
		return // SQLite has no standby
	}
	env := os.Getenv("GPUSUITE_TEST_PG_STANDBY")
	if env == "" {
		t.Fatal("GPUSUITE_TEST_PG_STANDBY is not set: test/pg/harness.sh start makes the standby and writes it to its env file")
	}
	su, err := url.Parse(env)
	if err != nil {
		t.Fatal(err)
	}
	pu, err := url.Parse(l.URL)
	if err != nil {
		t.Fatal(err)
	}
	su.Path = pu.Path
	var r *Ledger
	poll.Until(t, "the ledger replayed on the standby", 120*time.Second, 100*time.Millisecond, func() (bool, string) {
		r, err = Open(ctx, Options{URL: su.String(), ReadOnly: true})
		return err == nil, fmt.Sprint(err)
	})
	defer r.Close()
	lag, standby, err = r.ReplicaLag(ctx)
	if err != nil || !standby || lag < 0 {
		t.Fatalf("the standby's ledger: lag %v, standby %v, err %v; want ≥ 0, true, nil", lag, standby, err)
	}
	// Replay paused, a batch the standby receives but does not apply
	// shows as lag; resumed, it goes back to 0. The pause is the shared
	// standby's, for a moment: no other test of this pass reads it.
	ledgerdb.Exec(t, su.String(), `SELECT pg_wal_replay_pause()`)
	paused := true
	t.Cleanup(func() {
		if paused {
			ledgerdb.Exec(t, su.String(), `SELECT pg_wal_replay_resume()`)
		}
	})
	t0 := time.Date(2026, 3, 2, 10, 30, 0, 0, time.UTC)
	batchOf(t, s, t0.Add(time.Hour), func(b *Batch) error { return b.Event(ev(record.JobStart, "n1", t0, 1)) })
	poll.Until(t, "lag while replay is paused", 120*time.Second, 50*time.Millisecond, func() (bool, string) {
		lag, standby, err := r.ReplicaLag(ctx)
		return err == nil && standby && lag > 0, fmt.Sprint(lag, standby, err)
	})
	ledgerdb.Exec(t, su.String(), `SELECT pg_wal_replay_resume()`)
	paused = false
	poll.Until(t, "no lag once replay resumed", 120*time.Second, 50*time.Millisecond, func() (bool, string) {
		lag, standby, err := r.ReplicaLag(ctx)
		return err == nil && standby && lag == 0, fmt.Sprint(lag, standby, err)
	})
}
