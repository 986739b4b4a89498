package board

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmstate"
)

// minuteOf is what a case checks of one minute of a strip.
type minuteOf struct {
	Seen, Known bool
	Util        uint8
	Job         uint64
	More        bool
}

// tail is the last n minutes of s, oldest first.
func tail(s *Strip, n int) []minuteOf {
	var out []minuteOf
	for _, m := range s.Minutes[StripMinutes-n:] {
		out = append(out, minuteOf{Seen: m.Seen, Known: m.UtilKnown, Util: m.Util, Job: m.Job, More: m.MoreJobs})
	}
	return out
}

// TestRing: a ring keeps one bucket per minute (the mean of the minute's
// snapshots), shows whole minutes only, marks minutes without a snapshot
// as gaps, names the job that held the GPU and says when another did too,
// counts a snapshot read again once, and forgets what is an hour old.
func TestRing(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)
	type snap struct {
		at   time.Duration // after t0
		util *uint32
		jobs []uint64
	}
	tests := []struct {
		name  string
		snaps []snap
		at    time.Duration // the strip's time, after t0
		n     int
		want  []minuteOf
		none  bool // no strip: nothing seen in the hour
	}{
		{name: "mean of the minute, the current minute not shown", at: 2*time.Minute + 30*time.Second, n: 3,
			snaps: []snap{{10 * time.Second, u32(20), []uint64{7}}, {40 * time.Second, u32(41), []uint64{7}},
				{70 * time.Second, u32(90), []uint64{7}}, {130 * time.Second, u32(100), []uint64{7}}},
			want: []minuteOf{{}, {Seen: true, Known: true, Util: 31, Job: 7}, {Seen: true, Known: true, Util: 90, Job: 7}}},
		{name: "a gap between minutes", at: 4 * time.Minute, n: 4,
			snaps: []snap{{10 * time.Second, u32(50), nil}, {190 * time.Second, u32(0), []uint64{9}}},
			want:  []minuteOf{{Seen: true, Known: true, Util: 50}, {}, {}, {Seen: true, Known: true, Util: 0, Job: 9}}},
		{name: "a job change within a minute", at: time.Minute, n: 1,
			snaps: []snap{{10 * time.Second, u32(80), []uint64{7}}, {40 * time.Second, u32(60), []uint64{8}}},
			want:  []minuteOf{{Seen: true, Known: true, Util: 70, Job: 7, More: true}}},
		{name: "a snapshot read again counts once", at: time.Minute, n: 1,
			snaps: []snap{{10 * time.Second, u32(100), nil}, {10 * time.Second, u32(100), nil}, {40 * time.Second, u32(0), nil}},
			want:  []minuteOf{{Seen: true, Known: true, Util: 50}}},
		{name: "no utilization", at: time.Minute, n: 1,
			snaps: []snap{{10 * time.Second, nil, []uint64{7}}},
			want:  []minuteOf{{Seen: true, Job: 7}}},
		{name: "rollover: the slot of an hour ago is reused", at: 61 * time.Minute, n: 1,
			snaps: []snap{{10 * time.Second, u32(10), []uint64{1}}, {60*time.Minute + 10*time.Second, u32(30), []uint64{2}}},
			want:  []minuteOf{{Seen: true, Known: true, Util: 30, Job: 2}}},
		{name: "an hour old: nothing to show", at: 61 * time.Minute, none: true,
			snaps: []snap{{10 * time.Second, u32(10), []uint64{1}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r ring
			for _, s := range tc.snaps {
				var jobs []record.LiveJob
				for _, j := range s.jobs {
					jobs = append(jobs, record.LiveJob{Job: j})
				}
				r.add(t0.Add(s.at), s.util, jobs)
			}
			s := r.stripAt(t0.Add(tc.at))
			if tc.none {
				if s != nil {
					t.Fatalf("strip %v, want none", s)
				}
				return
			}
			if s == nil {
				t.Fatal("no strip")
			}
			if want := t0.Add(tc.at).Truncate(time.Minute); !s.End.Equal(want) {
				t.Errorf("End %v, want %v", s.End, want)
			}
			if diff := cmp.Diff(tc.want, tail(s, tc.n)); diff != "" {
				t.Errorf("minutes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRingStripMadeOncePerMinute: boards built within one minute share
// the strip (a row is sent again only when its strip moves), and a late
// snapshot into a shown minute makes it again.
func TestRingStripMadeOncePerMinute(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 5, 0, 0, 0, time.UTC)
	var r ring
	r.add(t0.Add(10*time.Second), u32(10), nil)
	r.add(t0.Add(70*time.Second), u32(10), nil)
	a := r.stripAt(t0.Add(80 * time.Second))
	r.add(t0.Add(90*time.Second), u32(90), nil) // the current minute: not shown
	if b := r.stripAt(t0.Add(100 * time.Second)); b != a {
		t.Error("a strip was made again within its minute")
	}
	if c := r.stripAt(t0.Add(121 * time.Second)); c == a || c.Minutes[StripMinutes-1].Util != 50 {
		t.Errorf("the next minute's strip: %+v", c.Minutes[StripMinutes-1])
	}
}

// TestHistoryObserve: a source's history gives each GPU and slice its
// strip and each node its state changes, and fills from past readings.
func TestHistoryObserve(t *testing.T) {
	h := NewHistory()
	t0 := now.Add(-10 * time.Minute)
	h.Fill([]Point{{Cluster: "c1", Node: "n1", UUID: "GPU-1", At: t0, Util: u32(70), Job: 42, User: "alice"}})
	st := slurm([]slurmstate.Node{snode("n1", slurmstate.Mixed, 1)})
	at := now.Add(-5 * time.Minute)
	for i := range 3 {
		l := fresh("n1", record.LiveGPU{UUID: "GPU-1", Util: u32(90), Jobs: []record.LiveJob{{Job: 42, User: "alice"}}})
		l.Time = at.Add(time.Duration(i) * time.Minute)
		if i == 2 {
			st = slurm([]slurmstate.Node{snode("n1", slurmstate.Drained, 1)})
		}
		b := Build([]record.Live{l}, st, nil, l.Time.Add(time.Second))
		h.observe([]record.Live{l}, &b, l.Time.Add(time.Second))
		if i < 2 {
			continue
		}
		g := b.Nodes[0].GPUs[0]
		if g.Strip == nil {
			t.Fatal("no strip")
		}
		want := []minuteOf{{Seen: true, Known: true, Util: 70, Job: 42}, {}, {}, {}, {}, {Seen: true, Known: true, Util: 90, Job: 42}, {Seen: true, Known: true, Util: 90, Job: 42}}
		if diff := cmp.Diff(want, tail(g.Strip, 7)); diff != "" {
			t.Errorf("strip (-want +got):\n%s", diff)
		}
		wantCh := []StateChange{{At: l.Time.Add(time.Second), From: "mixed", To: "drained"}}
		if diff := cmp.Diff(wantCh, b.Nodes[0].Changes); diff != "" {
			t.Errorf("changes (-want +got):\n%s", diff)
		}
	}
}
