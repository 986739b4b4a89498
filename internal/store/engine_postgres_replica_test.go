package store

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/testkit/poll"
)

// TestReplicaLag: a writer's ledger is no standby (SQLite, or a
// PostgreSQL primary); on PostgreSQL the same database read on the
// harness's streaming standby (GPUSUITE_TEST_PG_STANDBY,
// test/pg/harness.sh) is one, with a lag of at least 0.
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
}
