package ingest

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
)

// TestSlurmFactsAfterTreeFails: when sacctmgr does not answer for the
// account tree, the pass does not ask it for the cluster's facts (one
// timeout a pass); when it answers, it is asked.
func TestSlurmFactsAfterTreeFails(t *testing.T) {
	for _, tc := range []struct {
		name      string
		treeErr   error
		wantFacts bool
	}{
		{"tree read", nil, true},
		{"tree not read", errors.New("slurmdbd unreachable"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			s := e.open(t)
			defer s.Close()
			e.put(t, evFileIn(t, "c1", "g01", 500, record.JobStart, t0))
			facts := 0
			sacctmgr := func(ctx context.Context, args ...string) ([]byte, error) {
				if strings.Contains(strings.Join(args, " "), "show associations") {
					return nil, tc.treeErr
				}
				facts++
				return nil, nil
			}
			now := t0.Add(time.Minute)
			in := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid(),
				Sacctmgr: sacctmgr, SacctLocation: time.UTC})
			if _, err := in.Pass(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := facts > 0; got != tc.wantFacts {
				t.Errorf("cluster facts asked %d times, want asked: %v", facts, tc.wantFacts)
			}
		})
	}
}
