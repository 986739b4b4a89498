package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// TestPostgresCutMidBatch: a write after the writer's link was cut in
// the middle of a batch fails with ErrResource (not the data's fault:
// ingest keeps the file), and so does every write after it, until the
// writer is found to have lost its lock.
func TestPostgresCutMidBatch(t *testing.T) {
	ctx := context.Background()
	u, link := ledgerdb.ViaCutLink(t, ledgerdb.NewPostgresDB(t), nil)
	s := openPG(t, Options{URL: u, BusyTimeout: 3 * time.Second})
	b := sampleBatch(t, s, 1, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	link.Cut()
	err := pgSample(b, 2, time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC))
	b.Rollback()
	if !errors.Is(err, ErrResource) {
		t.Errorf("write after the link was cut: %v, want ErrResource", err)
	}
	for i := range 3 {
		err := s.RecordPass(ctx, Pass{Started: time.Now(), Finished: time.Now()})
		if !errors.Is(err, ErrResource) && !errors.Is(err, ErrLockLost) {
			t.Errorf("record pass %d after the link was cut: %v, want ErrResource or ErrLockLost", i, err)
		}
	}
}
