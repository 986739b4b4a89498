package agent

import (
	"os"
	"path/filepath"
	"strings"
)

// bootIDPath is where Linux tells one boot from the next (under
// agent.proc_root): a new random id at every boot.
const bootIDPath = "sys/kernel/random/boot_id"

// readBootID is the kernel's boot id; "" when it cannot be read, and then
// a reboot goes unnoticed and allocations carry over, as an agent restart's
// must.
func readBootID(procRoot string) string {
	b, err := os.ReadFile(filepath.Join(procRoot, bootIDPath))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// endJobsOfLastBoot ends the allocations of the checkpoint when it was
// written in an earlier boot (prev): no job survives a reboot, and no
// epilog comes for the jobs a power cut or crash killed (Slurm ends them
// NODE_FAIL, and ingest takes their end from sacct). Without this their
// GPUs would read held, and be sampled for them, until the agent's state
// was wiped. Their aggregates go out final with the samples taken before.
func (a *Agent) endJobsOfLastBoot(prev string) {
	if prev == "" || a.bootID == "" || prev == a.bootID || len(a.allocs) == 0 {
		return
	}
	ended := sortedKeys(a.allocs)
	for _, k := range ended {
		al := a.allocs[k]
		a.endRun(al.Job, al.Restart, nil)
	}
	a.dirty = true
	a.log.Warn("the node rebooted since the last checkpoint: the jobs it ran then cannot run now; their allocations end",
		"jobs", strings.Join(ended, ","), "boot_id", a.bootID, "previous_boot_id", prev)
}
