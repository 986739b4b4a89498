package slurm

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// fakeHarness writes an env file naming dir as the harness's directory
// and points GPUSUITE_SLURM_ENV at it.
func fakeHarness(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	env := filepath.Join(dir, "env")
	if err := os.WriteFile(env, []byte("SLURM_CONF="+dir+"/slurm.conf\nGPUSUITE_SLURM_DIR="+dir+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GPUSUITE_SLURM_ENV", env)
	return dir
}

// tryLock says whether the lock could be taken at once (how: LOCK_SH or
// LOCK_EX) through a descriptor of its own, and releases it.
func tryLock(t *testing.T, dir string, how int) bool {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "tests.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB) == nil
}

func TestLockOrdersTests(t *testing.T) {
	tests := []struct {
		name   string
		take   func(testing.TB) *Cluster
		shared bool // another test may take it shared meanwhile
	}{
		{"Get holds it shared", Get, true},
		{"Exclusive holds it alone", Exclusive, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := fakeHarness(t)
			t.Run("holder", func(t *testing.T) {
				c := tc.take(t)
				if c.Vars["GPUSUITE_SLURM_DIR"] != dir {
					t.Fatalf("cluster dir %q, want %q", c.Vars["GPUSUITE_SLURM_DIR"], dir)
				}
				if got := tryLock(t, dir, syscall.LOCK_SH); got != tc.shared {
					t.Errorf("shared lock while held: taken %v, want %v", got, tc.shared)
				}
				if tryLock(t, dir, syscall.LOCK_EX) {
					t.Errorf("exclusive lock taken while the cluster is held")
				}
			})
			if !tryLock(t, dir, syscall.LOCK_EX) {
				t.Errorf("lock still held after the holding test ended")
			}
		})
	}
}

func TestFlockWithinGivesUp(t *testing.T) {
	dir := fakeHarness(t)
	path := filepath.Join(dir, "tests.lock")
	holder, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := syscall.Flock(int(holder.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	waiter, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	if err := flockWithin(waiter, syscall.LOCK_SH, 100*time.Millisecond); err == nil {
		t.Fatal("shared lock taken while another holds it exclusive")
	}
	holder.Close()
	if err := flockWithin(waiter, syscall.LOCK_SH, time.Minute); err != nil {
		t.Fatalf("shared lock after the holder let go: %v", err)
	}
}

func TestMissingHarnessDirFails(t *testing.T) {
	dir := t.TempDir()
	env := filepath.Join(dir, "env")
	if err := os.WriteFile(env, []byte("SLURM_CONF=/x/slurm.conf\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GPUSUITE_SLURM_ENV", env)
	ft := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); Get(ft) }()
	<-done
	if ft.msg == "" {
		t.Fatal("Get of an env file without GPUSUITE_SLURM_DIR did not fail")
	}
}

// fatalRecorder records a Fatalf and ends the goroutine, as testing does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = format
	runtime.Goexit()
}
