package timespec

import (
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	tokyo, _ = time.LoadLocation("Asia/Tokyo")
	berlin   = mustLoc("Europe/Berlin")
	// now is Wednesday 2026-11-18 14:30:15 in Tokyo.
	now = time.Date(2026, 11, 18, 14, 30, 15, 0, tokyo)
)

func mustLoc(name string) *time.Location {
	l, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return l
}

func TestParse(t *testing.T) {
	tests := []struct {
		spec string
		want time.Time
	}{
		{"2026-11-01", time.Date(2026, 11, 1, 0, 0, 0, 0, tokyo)},
		{"2026-11-01T08:15", time.Date(2026, 11, 1, 8, 15, 0, 0, tokyo)},
		{"2026-11-01T08:15:42", time.Date(2026, 11, 1, 8, 15, 42, 0, tokyo)},
		{"2026-11-01 08:15", time.Date(2026, 11, 1, 8, 15, 0, 0, tokyo)},
		{"11/01", time.Date(2026, 11, 1, 0, 0, 0, 0, tokyo)},
		{"1/5", time.Date(2026, 1, 5, 0, 0, 0, 0, tokyo)},
		{"11/01/25", time.Date(2025, 11, 1, 0, 0, 0, 0, tokyo)},
		{"11/01/2024", time.Date(2024, 11, 1, 0, 0, 0, 0, tokyo)},
		{"now", now},
		{"NOW", now},
		{"now-3days", now.Add(-72 * time.Hour)},
		{"now-1day", now.Add(-24 * time.Hour)},
		{"now-2hours", now.Add(-2 * time.Hour)},
		{"now-30minutes", now.Add(-30 * time.Minute)},
		{"now-2weeks", now.Add(-14 * 24 * time.Hour)},
		{"now-90", now.Add(-90 * time.Second)},
		{"now+1hour", now.Add(time.Hour)},
		{"today", time.Date(2026, 11, 18, 0, 0, 0, 0, tokyo)},
		{"midnight", time.Date(2026, 11, 18, 0, 0, 0, 0, tokyo)},
		{"yesterday", time.Date(2026, 11, 17, 0, 0, 0, 0, tokyo)},
		{" today ", time.Date(2026, 11, 18, 0, 0, 0, 0, tokyo)},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := Parse(tt.spec, now, tokyo)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(tt.want) {
				t.Errorf("Parse(%q) = %s, want %s", tt.spec, got, tt.want)
			}
		})
	}
}

func TestParseBad(t *testing.T) {
	tests := []struct{ spec, want string }{
		{"", "empty time"},
		{"2026-13-01", "not a real date"},
		{"2026-02-30", "not a real date"},
		{"2026-11-01T25:00", "not a real date"},
		{"02/30", "not a real date"},
		{"now-3fortnights", `unit "fortnights"`},
		{"now-99999999999days", "too large"},
		{"now-1000000weeks", "more than 230 years from now"},
		{"now+1000000weeks", "more than 230 years from now"},
		{"now-3000weeks", "outside the years 1970 to 2199"},
		{"0001-01-01", "outside the years 1970 to 2199"},
		{"9999-12-31", "outside the years 1970 to 2199"},
		{"12/31/2200", "outside the years 1970 to 2199"},
		{"last tuesday", "is not one of"},
		{"2026/11/01", "is not one of"},
		{"tomorrow", "is not one of"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			_, err := Parse(tt.spec, now, tokyo)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse(%q) error %v, want one containing %q", tt.spec, err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is more than one line: %q", err)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, tokyo) }
	tests := []struct {
		name, start, end string
		want             Window
		wantErr          string
	}{
		{name: "default: 7 whole days", want: Window{day(11), day(18)}},
		{name: "start only runs to now", start: "2026-11-01", want: Window{day(1), now}},
		{name: "end only: 7 days before", end: "2026-11-10", want: Window{day(3), day(10)}},
		{name: "both", start: "11/01", end: "11/05", want: Window{day(1), day(5)}},
		{name: "end before start", start: "2026-11-05", end: "2026-11-01", wantErr: "--end 2026-11-01T00:00:00 is not after --start 2026-11-05T00:00:00"},
		{name: "empty window", start: "today", end: "midnight", wantErr: "is not after"},
		{name: "bad start", start: "soon", wantErr: `--start: time "soon"`},
		{name: "bad end", end: "13/45", wantErr: `--end: time "13/45"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolve(tt.start, tt.end, now, tokyo)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.Start.Equal(tt.want.Start) || !got.End.Equal(tt.want.End) {
				t.Errorf("window %s – %s, want %s – %s", got.Start, got.End, tt.want.Start, tt.want.End)
			}
		})
	}
}

func TestCheckBuckets(t *testing.T) {
	utc := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	tests := []struct {
		name   string
		w      Window
		p      Period
		wantOK bool
	}{
		{"total over the whole range", Window{utc(1970, 1, 1), utc(2199, 12, 31)}, None, true},
		{"days over 2 years", Window{utc(2024, 1, 1), utc(2026, 1, 1)}, Day, true},
		{"days over 3 years", Window{utc(2023, 1, 1), utc(2026, 1, 1)}, Day, false},
		{"days over the whole range", Window{utc(1970, 1, 1), utc(2199, 12, 31)}, Day, false},
		{"weeks over 19 years", Window{utc(2007, 1, 1), utc(2026, 1, 1)}, Week, true},
		{"weeks over 20 years", Window{utc(2006, 1, 1), utc(2026, 1, 1)}, Week, false},
		{"months over 83 years", Window{utc(1943, 1, 1), utc(2026, 1, 1)}, Month, true},
		{"months over the whole range", Window{utc(1970, 1, 1), utc(2199, 12, 31)}, Month, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckBuckets(tt.w, tt.p)
			if n := len(Buckets(tt.w, tt.p)); (n <= MaxBuckets) != tt.wantOK {
				t.Fatalf("test case wrong: %d buckets", n)
			}
			if tt.wantOK && err != nil {
				t.Fatalf("CheckBuckets: %v", err)
			}
			if !tt.wantOK && (err == nil || !strings.Contains(err.Error(), "shorten the window")) {
				t.Fatalf("CheckBuckets: %v, want a refusal saying how to narrow", err)
			}
		})
	}
}

func TestLoadLocation(t *testing.T) {
	if l, err := LoadLocation("UTC"); err != nil || l != time.UTC {
		t.Errorf("UTC: %v %v", l, err)
	}
	if l, err := LoadLocation(""); err != nil || l != time.Local {
		t.Errorf("empty: %v %v", l, err)
	}
	if _, err := LoadLocation("Mars/Olympus"); err == nil || !strings.HasPrefix(err.Error(), `--tz "Mars/Olympus"`) {
		t.Errorf("unknown zone: %v", err)
	}
}

func TestParsePeriod(t *testing.T) {
	for in, want := range map[string]Period{"": None, "day": Day, "WEEK": Week, "month": Month, "total": None} {
		if got, err := ParsePeriod(in); err != nil || got != want {
			t.Errorf("ParsePeriod(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParsePeriod("year"); err == nil || !strings.Contains(err.Error(), `--period "year"`) {
		t.Errorf("year: %v", err)
	}
}

func labels(bs []Bucket) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Label+" "+b.Start.Format("01-02T15")+".."+b.End.Format("01-02T15"))
	}
	return out
}

func TestBuckets(t *testing.T) {
	tests := []struct {
		name string
		w    Window
		p    Period
		want []string
	}{
		{"none", Window{time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC), time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)}, None,
			[]string{"total 11-01T06..11-03T00"}},
		{"days clipped at both ends", Window{time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC), time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)}, Day,
			[]string{"2026-11-01 11-01T06..11-02T00", "2026-11-02 11-02T00..11-03T00", "2026-11-03 11-03T00..11-03T12"}},
		// 2026-11-01 is a Sunday: its ISO week began Monday 10-26.
		{"weeks start on Monday", Window{time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 10, 0, 0, 0, 0, time.UTC)}, Week,
			[]string{"2026-W44 11-01T00..11-02T00", "2026-W45 11-02T00..11-09T00", "2026-W46 11-09T00..11-10T00"}},
		{"months", Window{time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}, Month,
			[]string{"2026-01 01-15T00..02-01T00", "2026-02 02-01T00..03-01T00"}},
		// Berlin's DST ends 2026-10-25: that day has 25 hours.
		{"DST day is 25 hours", Window{time.Date(2026, 10, 25, 0, 0, 0, 0, berlin), time.Date(2026, 10, 26, 0, 0, 0, 0, berlin)}, Day,
			[]string{"2026-10-25 10-25T00..10-26T00"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Buckets(tt.w, tt.p)
			if diff := cmp.Diff(tt.want, labels(got)); diff != "" {
				t.Errorf("buckets (-want +got):\n%s", diff)
			}
			// Adjacent and covering the window exactly.
			if !got[0].Start.Equal(tt.w.Start) || !got[len(got)-1].End.Equal(tt.w.End) {
				t.Errorf("buckets do not cover the window")
			}
			for i := 1; i < len(got); i++ {
				if !got[i].Start.Equal(got[i-1].End) {
					t.Errorf("gap between %d and %d", i-1, i)
				}
			}
		})
	}
	dst := Buckets(Window{time.Date(2026, 10, 25, 0, 0, 0, 0, berlin), time.Date(2026, 10, 26, 0, 0, 0, 0, berlin)}, Day)
	if d := dst[0].End.Sub(dst[0].Start); d != 25*time.Hour {
		t.Errorf("DST day lasts %s, want 25h", d)
	}
}

func TestFind(t *testing.T) {
	w := Window{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}
	bs := Buckets(w, Month)
	for i, b := range bs {
		for _, t0 := range []int64{b.Start.Unix(), b.End.Unix() - 1, (b.Start.Unix() + b.End.Unix()) / 2} {
			if got := Find(bs, t0); got != i {
				t.Errorf("Find(%d) = %d, want %d", t0, got, i)
			}
		}
	}
	if Find(bs, w.Start.Unix()-1) != -1 || Find(bs, w.End.Unix()) != -1 {
		t.Errorf("times outside the window are found")
	}
}

// genJob is a random job run: arrays share a job id's tasks, a requeued
// job is a second run of the same id.
type genJob struct {
	id, task, restart int
	gpus              int64
	start, end        int64
}

func genJobs(rng *rand.Rand, w Window, n int) []genJob {
	var out []genJob
	lo, hi := w.Start.Unix(), w.End.Unix()
	for id := 1; len(out) < n; id++ {
		tasks := 1
		if rng.Intn(5) == 0 {
			tasks = 2 + rng.Intn(20) // an array
		}
		for task := 0; task < tasks; task++ {
			restarts := 1
			if rng.Intn(10) == 0 {
				restarts = 2 + rng.Intn(3) // requeued
			}
			s := lo + rng.Int63n(hi-lo)
			for r := 0; r < restarts; r++ {
				d := rng.Int63n(10 * 86400)
				if rng.Intn(20) == 0 {
					d = 0 // a job that ended as it started
				}
				out = append(out, genJob{id, task, r, int64(1 + rng.Intn(8)), s, min(s+d, hi)})
				s += d + rng.Int63n(600)
				if s >= hi {
					break
				}
			}
		}
	}
	return out
}

// Allocated GPU-seconds summed over the period buckets equal Σ GPUs ×
// elapsed exactly, for every period, zone and random job mix.
func TestSplitProperty(t *testing.T) {
	zones := []*time.Location{time.UTC, tokyo, berlin, mustLoc("Asia/Kolkata"), mustLoc("America/St_Johns")}
	rng := rand.New(rand.NewSource(5))
	for trial := 0; trial < 60; trial++ {
		loc := zones[trial%len(zones)]
		start := time.Date(2025+rng.Intn(3), time.Month(1+rng.Intn(12)), 1+rng.Intn(28), rng.Intn(24), rng.Intn(60), 0, 0, loc)
		w := Window{start, start.Add(time.Duration(1+rng.Intn(400*24)) * time.Hour)}
		jobs := genJobs(rng, w, 300)
		var want int64
		for _, j := range jobs {
			want += j.gpus * (j.end - j.start)
		}
		for _, p := range []Period{None, Day, Week, Month} {
			bs := Buckets(w, p)
			var got int64
			per := make([]int64, len(bs))
			for _, j := range jobs {
				for i, s := range Split(j.start, j.end, bs) {
					per[i] += j.gpus * s
					got += j.gpus * s
				}
			}
			if got != want {
				t.Fatalf("trial %d %s %s: Σ buckets %d GPU-s, Σ GPUs×elapsed %d", trial, loc, p, got, want)
			}
			// Each bucket holds no more than its length × all GPUs of
			// the jobs in it, and no bucket is negative.
			for i, v := range per {
				if v < 0 {
					t.Fatalf("bucket %d negative", i)
				}
			}
		}
	}
}

func TestSplitClipsToWindow(t *testing.T) {
	w := Window{time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)}
	bs := Buckets(w, Day)
	// A job from 10-31 12:00 to 11-02 06:00.
	got := Split(time.Date(2026, 10, 31, 12, 0, 0, 0, time.UTC).Unix(), time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC).Unix(), bs)
	if diff := cmp.Diff([]int64{86400, 6 * 3600}, got); diff != "" {
		t.Errorf("split (-want +got):\n%s", diff)
	}
	if got := Split(100, 50, bs); got[0] != 0 || got[1] != 0 {
		t.Errorf("a reversed interval splits into %v", got)
	}
}
