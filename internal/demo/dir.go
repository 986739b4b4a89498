package demo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/aicloud/gpusuite/internal/spool"
)

// The files of a demo directory besides the plots.
const (
	// infoFile says that a directory is a demo's and what cluster it
	// simulated, so that `gpuacct demo serve` brings the same nodes to life.
	infoFile = "demo.json"
	dbFile   = "gpuacct.db"
	// LiveDirName is the directory of the nodes' live snapshots.
	LiveDirName = "live"
	infoSchema  = "gpusuite.demo/v1"
	// maxInfoBytes bounds the read of infoFile: it is a few hundred bytes.
	maxInfoBytes = 64 << 10
)

// DefaultListen is where `gpuacct demo serve` serves: this machine only.
const DefaultListen = "127.0.0.1:8080"

// Info is a demo directory's description (demo.json).
type Info struct {
	Schema  string `json:"schema"`
	Cluster string `json:"cluster"`
	Nodes   int    `json:"nodes"`
	GPUs    int    `json:"gpus"`
	Model   string `json:"model"`
	Seed    int64  `json:"seed"`
	// NextJob is the first job id after the simulated weeks' jobs: the
	// live demo numbers its jobs from it, as Slurm goes on counting.
	NextJob uint64 `json:"next_job"`
	// Start is when the simulated weeks began: the demo's slurmdbd has
	// the cluster registered from then on. Zero in directories made
	// before it was recorded.
	Start time.Time `json:"start"`
	// LiveUntil is when the build's live nodes stopped: their last
	// samples are in the ledger, and demo serve's agents sample the same
	// GPUs only a build interval after it, or ingest would find the two
	// samples overlapping. Zero in directories made before it was
	// recorded.
	LiveUntil time.Time `json:"live_until,omitzero"`
}

func writeInfo(dir string, in Info) error {
	in.Schema = infoSchema
	data, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", infoFile, err)
	}
	path := filepath.Join(dir, infoFile)
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %q: %w", path, err)
	}
	return nil
}

// ReadInfo reads dir's demo.json, saying in one line how to make a demo
// directory when dir is none.
func ReadInfo(dir string) (Info, error) {
	var in Info
	notDemo := func(why string) error {
		return fmt.Errorf("%q is not a demo directory (%s): run `gpuacct demo --dir %s` first, or give the directory it printed", dir, why, dir)
	}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return in, notDemo("it does not exist")
	case err != nil:
		return in, fmt.Errorf("read demo directory %q: %w", dir, err)
	case !st.IsDir():
		return in, notDemo("it is not a directory")
	}
	// Read as every shared file is: a FIFO in its place would block an
	// open that follows it, and a demo writes no link.
	data, _, err := spool.ReadRegular(filepath.Join(dir, infoFile), maxInfoBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return in, notDemo("no " + infoFile)
	case errors.Is(err, spool.ErrNotRegular):
		return in, notDemo(infoFile + " is not a regular file")
	case errors.Is(err, spool.ErrTooLarge), errors.Is(err, spool.ErrGrew):
		return in, notDemo(infoFile + " is larger than a demo writes")
	case err != nil:
		return in, fmt.Errorf("read demo directory %q: %w", dir, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || in.Schema != infoSchema {
		return in, notDemo(infoFile + " is not the demo's")
	}
	if in.Nodes < 1 || in.GPUs < 1 || in.GPUs > 64 || in.Cluster == "" || in.Model == "" {
		return in, notDemo(infoFile + " describes no cluster")
	}
	if _, err := os.Stat(filepath.Join(dir, dbFile)); err != nil {
		return in, notDemo("no " + dbFile)
	}
	return in, nil
}

// lockLive makes this process the one writer of dir's snapshots: a second
// `demo serve` on the same directory would run a second agent per node,
// each replacing the other's files.
func lockLive(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("demo serve: %w", err)
	}
	path := filepath.Join(dir, ".demo-serve.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("demo serve: open lock %q: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("demo serve: another demo serve keeps %s alive (lock %s); end it first, or serve another demo directory", dir, path)
	}
	return func() { f.Close() }, nil
}
