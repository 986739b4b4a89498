package report

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/ingest"
	"github.com/aicloud/gpusuite/internal/ingest/gendata"
)

// ledger generates a simulated cluster's records (real hook code for the
// events, the agent's record types for samples and aggregates) and
// ingests them with the real ingest pass into root/gpuacct.db.
func ledger(tb testing.TB, root string, o gendata.Options) (string, gendata.Truth) {
	tb.Helper()
	if err := os.Chmod(root, 0o755); err != nil {
		tb.Fatal(err)
	}
	cfg := config.Default()
	cfg.Store.Path = filepath.Join(root, "gpuacct.db")
	cfg.Ingest.Incoming = filepath.Join(root, "incoming")
	cfg.Ingest.Quarantine = filepath.Join(root, "quarantine")
	cfg.Ingest.Archive = filepath.Join(root, "archive")
	cfg.Ingest.Keep = "delete"
	cfg.Ingest.Sacct = ""
	if err := os.MkdirAll(cfg.Ingest.Incoming, 0o755); err != nil {
		tb.Fatal(err)
	}
	truth, err := gendata.Generate(cfg.Ingest.Incoming, o)
	if err != nil {
		tb.Fatal(err)
	}
	now := o.Start.Add(o.Duration).Add(time.Hour)
	if err := ingestAt(cfg, now); err != nil {
		tb.Fatal(err)
	}
	return cfg.Store.Path, truth
}

func ingestAt(cfg config.Config, now time.Time) error {
	st, err := openWriter(cfg.Store.Path)
	if err != nil {
		return err
	}
	defer st.Close()
	_, err = ingest.New(ingest.Deps{Store: st, Config: cfg, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now: func() time.Time { return now }, UID: os.Getuid()}).Pass(context.Background())
	return err
}

// testDeps runs commands with fixed clock, width and identity.
func testDeps(now time.Time, env map[string]string) (Deps, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return Deps{
		Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }, Now: func() time.Time { return now },
		Width: func() int { return 0 }, StderrTTY: func() bool { return false },
		Euid: func() int { return 0 }, Username: func() string { return "root (sudo by alice)" },
	}, &out, &errb
}
