package web_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
)

// TestJobPageGPUEvents: an Xid on a running job's GPU, shipped as a GPU
// event and ingested by serve, shows on the job's page and in its JSON
// with its meaning.
func TestJobPageGPUEvents(t *testing.T) {
	now := time.Now()
	f := newFixture(t, now)
	j := f.running
	at := j.start.Add(time.Minute).UTC()
	u := sim.UUID(j.node, j.gpus[0])
	ev := record.GPUEvent{Schema: record.GPUEventSchema, Key: record.GPUEventKey(cluster, j.node, u, at, record.GPUXid, 79, ""),
		Kind: record.GPUXid, Time: at, Cluster: cluster, Node: j.node, UUID: u, Index: j.gpus[0], Code: 79, Jobs: []record.JobRef{{Job: j.id}}}
	data, err := json.Marshal(&ev)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.incoming, j.node, record.GPUEventFileName(cluster, j.node, u, at, record.GPUXid, 79, "")), data, 0o644); err != nil {
		t.Fatal(err)
	}
	f.serve(t)
	id := "9000001"
	code, page := getJSON(t, f.url("/job/"+cluster+"/"+id), nil)
	if code != http.StatusOK {
		t.Fatalf("job page: %d %.300s", code, page)
	}
	// The date shows too when the event falls on another day than the
	// job's start.
	for _, want := range []string{"Xid 79 (GPU has fallen off the bus) at ", at.Format("15:04:05") + "."} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the job page does not say %q", want)
		}
	}
	var det struct {
		Events []struct {
			Kind, Meaning string
			Code          int64
		} `json:"gpu_events"`
	}
	if code, b := getJSON(t, f.url("/api/v1/jobs/"+cluster+"/"+id), &det); code != http.StatusOK || len(det.Events) != 1 ||
		det.Events[0].Kind != "xid" || det.Events[0].Code != 79 || det.Events[0].Meaning != "GPU has fallen off the bus" {
		t.Errorf("job JSON: %d %+v %.300s", code, det.Events, b)
	}
}
