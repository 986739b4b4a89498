package ingest

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/sim"
)

// TestJobStory: a job whose GPU was power-throttled and then fell off
// the bus, sampled with chosen metrics (one the GPU cannot give), reads
// back from the real ingest as `gpuacct job` tells it: the events as
// dated notes, the metrics' time-weighted means and peaks, peak power;
// and `gpuacct export samples --job` prints the samples' metrics.
func TestJobStory(t *testing.T) {
	e := newEnv(t)
	s := e.open(t)
	defer s.Close()
	start := t0.Add(14 * time.Hour) // 14:00:00 UTC
	end := start.Add(2*time.Minute + 14*time.Second)
	stop := evFile(t, "gpu001", 77, 0, record.JobEnd, end, 0)
	var ev record.Event
	if err := json.Unmarshal(stop.data, &ev); err != nil {
		t.Fatal(err)
	}
	ev.Job.Exit = &record.Exit{Code: 1}
	stop.data, _ = json.Marshal(&ev)
	u := sim.UUID("gpu001", 0)
	var samples []record.Sample
	for i := range 13 { // 14:00:00 … 14:02:00, 10 s apart
		p := uint32(300_000)
		m := map[string]float64{"sm_active_pct": 40, "power_throttle_pct": 0}
		if i >= 1 && i < 5 { // throttled 14:00:10–14:00:50
			p, m["power_throttle_pct"] = 450_000, 75.3
		}
		s := busy("gpu001", 0, start.Add(time.Duration(i)*10*time.Second), 77)
		s.PowerMW, s.Metrics = &p, m
		samples = append(samples, s)
	}
	seg := segFile(t, "gpu001", 1, 10, samples)
	seg.data = bytes.Replace(seg.data, []byte(`"start"`), []byte(`"metrics":["power_throttle_pct","sm_active_pct","fp64_active_pct"],`+
		`"unsupported":{"`+u+`":["fp64_active_pct: GPM not supported by this GPU"]},"start"`), 1)
	ref := record.JobRef{Job: 77}
	e.put(t, evFile(t, "gpu001", 77, 0, record.JobStart, start, 0), stop, seg,
		gpuEvFile(t, "gpu001", 0, start.Add(10*time.Second), record.GPUThrottleStart, 0, record.ThrottlePower, ref),
		gpuEvFile(t, "gpu001", 0, start.Add(50*time.Second), record.GPUThrottleEnd, 0, record.ThrottlePower, ref),
		gpuEvFile(t, "gpu001", 0, start.Add(131*time.Second), record.GPUXid, 79, "", ref),
		// Another job's GPU, and an event long after the job: not its.
		gpuEvFile(t, "gpu001", 1, start.Add(20*time.Second), record.GPUXid, 13, ""),
		gpuEvFile(t, "gpu001", 0, end.Add(10*time.Minute), record.GPUXid, 31, ""),
	)
	now := end.Add(time.Hour)
	if res := e.pass(t, s, now); res.Quarantined != 0 || res.Deferred != 0 {
		t.Fatalf("pass: %+v, want nothing quarantined or left", res)
	}
	db, err := report.OpenDB(context.Background(), e.cfg.Store.Location(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	det, err := db.Job(context.Background(), "", report.JobSpec{ID: 77, Restart: -1}, now)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"GPU 0 on gpu001: power throttling 14:00:10–14:00:50 (40s).",
		"GPU 0 on gpu001: Xid 79 (GPU has fallen off the bus) at 14:02:11; the job failed 3s later.",
	}
	if d := cmp.Diff(want, det.EventNotes(time.UTC)); d != "" {
		t.Errorf("event notes (-want +got):\n%s", d)
	}
	if len(det.GPUs) != 1 {
		t.Fatalf("%d GPUs, want 1", len(det.GPUs))
	}
	g := det.GPUs[0]
	// 13 samples of 10 s inside the job, the last cut to its end (14 s
	// of 10: all of it): power 4 × 450 W and 9 × 300 W.
	if g.PowerPeakW == nil || *g.PowerPeakW != 450 || g.PowerMeanW == nil || report.Decimal(*g.PowerMeanW, 3) != report.Decimal((4*450+9*300)/13.0, 3) {
		t.Errorf("power mean %v peak %v, want %.3f and 450", g.PowerMeanW, g.PowerPeakW, (4*450+9*300)/13.0)
	}
	got := map[string]string{}
	for _, m := range g.Metrics {
		if m.Unsupported != "" {
			got[m.Name] = "unsupported: " + m.Unsupported
			continue
		}
		got[m.Name] = report.HumanMetric(m.Name, *m.Mean) + " / " + report.HumanMetric(m.Name, *m.Peak)
	}
	wantM := map[string]string{
		"power_throttle_pct": "23.2 % / 75.3 %", // 4 × 75.3 / 13
		"sm_active_pct":      "40 % / 40 %",
		"fp64_active_pct":    "unsupported: GPM not supported by this GPU",
	}
	if d := cmp.Diff(wantM, got); d != "" {
		t.Errorf("metrics (-want +got):\n%s", d)
	}
	var text bytes.Buffer
	if err := report.WriteJobText(&text, det, &teams.Mapping{}, time.UTC, 100); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"power_w", "450 W", "fp64_active_pct              not supported: GPM not supported by this GPU", "Xid 79 (GPU has fallen off the bus)"} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("gpuacct job's text lacks %q:\n%s", w, text.String())
		}
	}

	var out bytes.Buffer
	spec := report.JobSpec{ID: 77, Restart: -1}
	if _, err := db.Export(context.Background(), report.ExportOptions{Kind: "samples", Out: &out, Job: &spec, Now: now,
		Window: timespec.Window{Start: start, End: end}}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 14 {
		t.Fatalf("%d rows exported, want a header and 13 samples", len(rows))
	}
	head := strings.Join(rows[0], ",")
	if !strings.HasSuffix(head, ",util_pct,mem_util_pct,mem_used_mib,power_w,energy_mj,temp_c,sm_clock_mhz,missing,power_throttle_pct,sm_active_pct") {
		t.Errorf("header %s", head)
	}
	if r := strings.Join(rows[2][len(rows[2])-2:], ","); r != "75.3,40" || rows[2][11] != "450" {
		t.Errorf("second sample: %v", rows[2])
	}
}
