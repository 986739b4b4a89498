package demo

import (
	"encoding/json"
	"path/filepath"
	"sync"
	"time"

	"github.com/aicloud/gpusuite/internal/slurmstate"
)

// SlurmFileName is the file in a demo directory that holds the simulated
// Slurm's view, so that gpuacct free and status (--slurm-file) count
// free GPUs as the board does: no scontrol knows the demo's drain and
// reservation.
const SlurmFileName = "slurm.json"

// slurmFileBeat is how often the view is rewritten when it has not
// changed, so that its age says whether demo serve still runs.
const slurmFileBeat = 30 * time.Second

// SlurmFile is the path of dir's simulated Slurm view.
func SlurmFile(dir string) string { return filepath.Join(dir, SlurmFileName) }

// slurmFile keeps a demo directory's slurm.json: Live.Slurm gives it
// every view it makes, and it writes each one that differs from the last
// written (or is slurmFileBeat newer), atomically.
type slurmFile struct {
	path string

	mu      sync.Mutex
	last    []byte // the last view written, without its time
	written time.Time
}

// keep writes st unless it is the view last written and that is recent.
func (f *slurmFile) keep(st slurmstate.State) error {
	undated := st
	undated.At = time.Time{}
	data, err := json.Marshal(undated)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if string(data) == string(f.last) && st.At.Sub(f.written) < slurmFileBeat {
		return nil
	}
	if err := slurmstate.WriteFile(f.path, st); err != nil {
		return err
	}
	f.last, f.written = data, st.At
	return nil
}
