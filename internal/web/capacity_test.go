package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/web"
)

// TestCapacityOnUsageChart: with Slurm's cluster facts in the ledger (as
// ingest stores them from sacctmgr), the accounting page's usage chart
// draws the cluster's GPU capacity per day over the allocated bars, the
// value report cluster prints as REPORTED; served by the real gpuacct
// serve over HTTP.
func TestCapacityOnUsageChart(t *testing.T) {
	now := time.Now()
	f := newFixture(t, now)
	// 12 GPUs from a day before the jobs, still so.
	setFacts(t, f, now, store.ClusterFacts{From: f.genStart.Add(-24 * time.Hour).Unix(), To: now.Unix(),
		Events: []store.SlurmEvent{{Cluster: cluster, Start: f.genStart.Add(-24 * time.Hour).Unix(), GPUs: 12}}})
	f.serve(t)

	day := f.genStart.Truncate(24 * time.Hour).Add(24 * time.Hour) // a whole UTC day of the window
	win := url.Values{"start": {day.Format("2006-01-02")}, "end": {day.Add(48 * time.Hour).Format("2006-01-02")}, "period": {"day"}}
	code, page := getJSON(t, f.url("/accounting?"+win.Encode()), nil)
	if code != http.StatusOK {
		t.Fatalf("/accounting: %d %.300s", code, page)
	}
	html := string(page)
	want := day.Format("2006-01-02") + " · GPU capacity (Slurm): 288.0 GPU-h"
	if !strings.Contains(html, "<title>"+want+"</title>") {
		t.Errorf("the usage chart lacks the capacity segment %q", want)
	}
	// Today counts to the end of this hour, as slurmdbd rolls up an hour
	// asked for early; later hours are not counted.
	if today := now.UTC().Truncate(24 * time.Hour); today.Before(day.Add(48 * time.Hour)) {
		want := today.Format("2006-01-02") + " · GPU capacity (Slurm): " + web.HoursOf(float64(12*(now.UTC().Hour()+1))) + " GPU-h"
		if !strings.Contains(html, "<title>"+want+"</title>") {
			t.Errorf("the usage chart lacks today's capacity segment %q", want)
		}
	}
	if !strings.Contains(html, "GPU capacity (Slurm)</span>") {
		t.Errorf("the chart's legend lacks the capacity")
	}
	out := string(f.cliOut(t, now, "report", "cluster", "--start", day.Format("2006-01-02"), "--end", day.Add(24*time.Hour).Format("2006-01-02"), "-P", "-n"))
	if fields := strings.Split(out, "|"); len(fields) < 7 || fields[6] != "288" {
		t.Errorf("report cluster over the day: %q, want 288 GPU-h reported", out)
	}
}

// setFacts writes Slurm's cluster facts into f's ledger, as ingest does.
func setFacts(t *testing.T, f *fixture, now time.Time, facts store.ClusterFacts) {
	t.Helper()
	st, err := store.Open(context.Background(), store.At(f.db))
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.Begin(context.Background(), now)
	if err == nil {
		err = b.SetClusterFacts(facts)
	}
	if err == nil {
		err = b.Commit()
	}
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCapacityErrorDrawsNoLine: when the capacity cannot be computed (a
// reservation stored before ingest refused hostlists it cannot expand),
// the accounting page is served all the same, without the capacity line.
func TestCapacityErrorDrawsNoLine(t *testing.T) {
	now := time.Now()
	f := newFixture(t, now)
	start := f.genStart.Add(-24 * time.Hour).Unix()
	setFacts(t, f, now, store.ClusterFacts{From: start, To: now.Unix(),
		Events:       []store.SlurmEvent{{Cluster: cluster, Start: start, GPUs: 12}},
		Reservations: []store.SlurmReservation{{Cluster: cluster, ID: 1, Name: "bad", Start: start + 3600, End: now.Unix(), Nodes: "n[1-", GPUs: 4}}})
	f.serve(t)
	day := f.genStart.Truncate(24 * time.Hour).Add(24 * time.Hour)
	win := url.Values{"start": {day.Format("2006-01-02")}, "end": {day.Add(48 * time.Hour).Format("2006-01-02")}, "period": {"day"}}
	code, page := getJSON(t, f.url("/accounting?"+win.Encode()), nil)
	if code != http.StatusOK {
		t.Fatalf("/accounting with a capacity that cannot be computed: %d %.300s", code, page)
	}
	if strings.Contains(string(page), "GPU capacity (Slurm)") {
		t.Errorf("the page draws a capacity line it could not compute")
	}
}
