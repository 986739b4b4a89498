package store

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/testkit/reexec"
)

// readerEnv makes this test binary, run again, the reader helper.
const readerEnv = "GPUSUITE_TEST_READER_DB"

// TestMain lets the read-only tests run this binary as another user.
func TestMain(m *testing.M) {
	if path := os.Getenv(readerEnv); path != "" {
		os.Exit(readerHelper(path))
	}
	os.Exit(m.Run())
}

// readerHelper opens path read-only and counts the nodes, as gpuacct
// report does, and prints the count.
func readerHelper(path string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, Options{Path: path, ReadOnly: true, BusyTimeout: time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM nodes`).Scan(&n); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(n)
	return 0
}

// runReader runs the helper as nobody (65534) when this test runs as
// root, who would pass every permission check; as itself otherwise.
func runReader(t *testing.T, bin, path string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), readerEnv+"="+path)
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// readerBinary copies this test binary where another user may run it.
func readerBinary(t *testing.T) string {
	t.Helper()
	return reexec.Copy(t, t.TempDir(), "reader.test")
}

// TestSQLiteReaderWithoutWriter: an ordinary user reads a WAL ledger in a
// directory that only the service user may write, with serve stopped
// (no -wal, no -shm to share) and with serve running.
func TestSQLiteReaderWithoutWriter(t *testing.T) {
	ctx := context.Background()
	bin := readerBinary(t)
	dir := filepath.Join(t.TempDir(), "gpusuite")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(filepath.Dir(dir)), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "gpuacct.db")
	w, err := Open(ctx, Options{Path: path, Journal: JournalWAL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.db.Exec(`INSERT INTO nodes(cluster, name) VALUES ('c1', 'gpu01'), ('c1', 'gpu02')`); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, LockPath(path)} {
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	for _, f := range []string{"-wal", "-shm"} {
		if _, err := os.Stat(path + f); err == nil {
			t.Fatalf("%s left after the writer closed", f)
		}
	}
	out, err := runReader(t, bin, path)
	if err != nil || out != "2" {
		t.Fatalf("reader with serve stopped: %v: %s", err, out)
	}
	// serve running: its -wal and -shm exist, readable, not writable.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w, err = Open(ctx, Options{Path: path, Journal: JournalWAL})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.db.Exec(`INSERT INTO nodes(cluster, name) VALUES ('c1', 'gpu03')`); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"-wal", "-shm"} {
		if err := os.Chmod(path+f, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	out, err = runReader(t, bin, path)
	if err != nil || out != "3" {
		t.Fatalf("reader with serve running: %v: %s", err, out)
	}
}

// TestReaderPoolBounded: a reader's pool holds at most ReadConns
// connections on SQLite, pgConns on PostgreSQL, however many queries
// wait.
func TestReaderPoolBounded(t *testing.T) {
	ctx := context.Background()
	_, l := openLedger(t)
	r, err := Open(ctx, Options{Path: l.Path, URL: l.URL, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want := ReadConns
	if l.URL != "" {
		want = pgConns
	}
	if got := r.db.Stats().MaxOpenConnections; got != want {
		t.Errorf("reader pool allows %d connections, want %d", got, want)
	}
}
