package slurm_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/testkit/slurm"
)

// ledger is a fresh accounting database, filled by one `gpuacct ingest`.
type ledger struct {
	gpuacct, cfg, db string
	c                *slurm.Cluster
}

// ledgerConfig is what a test ledger's gpusuite.toml adds to the common
// part (store path, incoming, quarantine, archive, keep, grace, log level).
type ledgerConfig struct {
	// Cluster, when set, is cluster.name.
	Cluster string
	// Ingest are more [ingest] lines (sacct = ..., sacctmgr = ...).
	Ingest string
}

// ingested is a test ledger after its one ingest pass.
type ingested struct {
	*ledger
	// Quarantined are the names of the files ingest quarantined or
	// refused (with their .reason notes).
	Quarantined []string
	// Left is how many files ingest left in incoming/<node>.
	Left int
	// Log is the pass's stderr.
	Log string
}

// ingestLedger copies files (events of the harness's spool; copies: other
// tests read the spool too) into <root>/incoming/<node>/ of a new root,
// writes its gpusuite.toml with cfg and runs one ingest pass, with a
// grace of 1 s so a job without its end is closed in this pass.
func ingestLedger(t *testing.T, gpuacct string, c *slurm.Cluster, files []string, cfg ledgerConfig) ingested {
	t.Helper()
	root := t.TempDir()
	in := filepath.Join(root, "incoming", c.Path("GPUSUITE_SLURM_NODE"))
	// Ingest trusts only its service user's (here: our) files in
	// directories nobody else can write.
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{root, filepath.Join(root, "incoming"), in} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(in, filepath.Base(p)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l := &ledger{gpuacct: gpuacct, cfg: filepath.Join(root, "gpusuite.toml"), db: filepath.Join(root, "gpuacct.db"), c: c}
	var toml strings.Builder
	if cfg.Cluster != "" {
		fmt.Fprintf(&toml, "[cluster]\nname = %q\n\n", cfg.Cluster)
	}
	fmt.Fprintf(&toml, `[store]
path = %q

[ingest]
incoming = %q
quarantine = %q
archive = %q
keep = "delete"
grace = "1s"
log_level = "debug"
%s`, l.db, filepath.Join(root, "incoming"), filepath.Join(root, "quarantine"), filepath.Join(root, "archive"), cfg.Ingest)
	if err := os.WriteFile(l.cfg, []byte(toml.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, log := l.run(t, "ingest")
	out := ingested{ledger: l, Log: log}
	q, _ := filepath.Glob(filepath.Join(root, "quarantine", "*", "*"))
	for _, p := range q {
		out.Quarantined = append(out.Quarantined, filepath.Base(p))
	}
	left, _ := os.ReadDir(in)
	out.Left = len(left)
	return out
}

// run runs gpuacct with the ledger's config and the cluster's environment
// (SLURM_CONF, for sacct) and returns its stdout and stderr.
func (l *ledger) run(t *testing.T, args ...string) (string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, l.gpuacct, append([]string{"--config", l.cfg}, args...)...)
	cmd.Env = l.c.Env()
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("gpuacct %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String()
}
