package slurm_test

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/testkit/slurm"
)

// exportedDetails is what `gpuacct export jobs` says of a job's comment
// tag and array ids.
type exportedDetails struct {
	JobID       uint64 `json:"job_id"`
	Account     string `json:"account"`
	Ignored     int    `json:"ignored"`
	AllocGPUS   int64  `json:"alloc_gpu_s"`
	ArrayJobID  *int64 `json:"array_job_id"`
	ArrayTaskID *int64 `json:"array_task_id"`
}

// TestJobDetailsFromSacct: slurmd gives the hooks no comment and no array
// ids; the ingest takes both from the real sacct (AccountingStoreFlags=
// job_comment), so a job submitted with the ignore tag in its comment is
// ignored by the same pass: out of the team's totals, still listed.
func TestJobDetailsFromSacct(t *testing.T) {
	c := slurm.Get(t)
	slurm.EnsureUser(t, "alice")
	gpuacct := slurm.Binary(t, "gpuacct")

	// The tagged job holds four GPUs long enough to show in GPU-hours.
	tagged := c.Sbatch(t, "alice", "--comment", "gpuacct:ignore benchmark", "-A", "team-a", "--gres=gpu:4", "--wrap", "sleep 20")
	plain := c.Sbatch(t, "alice", "-A", "team-a", "--gres=gpu:1", "--wrap", "sleep 2")
	array := c.Sbatch(t, "alice", "-A", "team-a", "--gres=gpu:1", "--array=0-1", "--wrap", "sleep 1")
	rows := c.WaitAccounted(t, 3*time.Minute, 4, tagged, plain, array)
	if len(rows) != 4 {
		t.Fatalf("sacct has %d rows, want 4 (an array of 2): %+v", len(rows), rows)
	}
	for _, r := range rows {
		waitEvent(t, c, r.JobIDRaw, record.JobStart, 60*time.Second)
		waitEvent(t, c, r.JobIDRaw, record.JobEnd, 60*time.Second)
	}
	l := newLedger(t, gpuacct, c, rows, nil, "sacct")

	out, _ := l.run(t, "export", "jobs", "--format", "jsonl", "--start", "now-1days")
	got := map[uint64]exportedDetails{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e exportedDetails
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("export line %q: %v", line, err)
		}
		got[e.JobID] = e
	}
	var counted int64
	for _, r := range rows {
		g, ok := got[r.JobIDRaw]
		if !ok {
			t.Fatalf("job %d (%s) is not in the ledger", r.JobIDRaw, r.JobID)
		}
		if want := r.JobIDRaw == tagged; (g.Ignored == 1) != want {
			t.Errorf("job %d (%s): ignored %d, want %v", r.JobIDRaw, r.JobID, g.Ignored, want)
		}
		if g.Ignored == 0 {
			counted += g.AllocGPUS
		}
		a, task, isTask := strings.Cut(r.JobID, "_")
		switch {
		case isTask:
			if g.ArrayJobID == nil || g.ArrayTaskID == nil || strconv.FormatInt(*g.ArrayJobID, 10) != a || strconv.FormatInt(*g.ArrayTaskID, 10) != task {
				t.Errorf("array task %s (job %d): ledger array ids %v_%v", r.JobID, r.JobIDRaw, deref(g.ArrayJobID), deref(g.ArrayTaskID))
			}
		case g.ArrayJobID != nil:
			t.Errorf("job %d is no array task, yet has array id %d", r.JobIDRaw, *g.ArrayJobID)
		}
	}
	if got[tagged].AllocGPUS < 4*15 {
		t.Fatalf("tagged job: %d GPU-s, want about 80", got[tagged].AllocGPUS)
	}

	// Totals leave it out.
	// Whole UTC days: a window ending now would stop at the last full hour.
	day := time.Now().UTC()
	out, _ = l.run(t, "report", "teams", "--format", "json", "--tz", "UTC",
		"--start", day.AddDate(0, 0, -1).Format("2006-01-02"), "--end", day.AddDate(0, 0, 1).Format("2006-01-02"))
	var teams struct {
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &teams); err != nil {
		t.Fatalf("report teams: %v\n%s", err, out)
	}
	var hours float64
	found := false
	for _, r := range teams.Rows {
		if r["team"] == "team-a" {
			h, ok := r["alloc_gpu_hours"].(float64)
			if !ok {
				t.Fatalf("team-a row without alloc_gpu_hours: %v", r)
			}
			hours, found = h, true
		}
	}
	if !found {
		t.Fatalf("no team-a in report teams:\n%s", out)
	}
	if want := float64(counted) / 3600; math.Abs(hours-want) > 0.005 {
		t.Errorf("team-a %.4f GPU-h, want %.4f (the untagged jobs' %d GPU-s only)\n%s", hours, want, counted, out)
	}

	// Still listed, as ignored, with the reason.
	list, _ := l.run(t, "ignore", "--list")
	if !strings.Contains(list, strconv.FormatUint(tagged, 10)) || !strings.Contains(list, "gpuacct:ignore") {
		t.Errorf("ignore --list does not list job %d by its comment:\n%s", tagged, list)
	}
}
