package spool

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWriteAndList(t *testing.T) {
	d := Dir{Path: filepath.Join(t.TempDir(), "spool")}
	if err := d.Ensure(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(d.Path); st.Mode().Perm() != 0o700 {
		t.Errorf("mode %v, want 0700", st.Mode().Perm())
	}
	if err := d.Write("a.json", []byte("first")); err != nil {
		t.Fatal(err)
	}
	err := d.Write("a.json", []byte("second"))
	if !errors.Is(err, ErrExists) {
		t.Fatalf("second write: %v, want ErrExists", err)
	}
	if b, _ := os.ReadFile(filepath.Join(d.Path, "a.json")); string(b) != "first" {
		t.Errorf("content %q: the first record must win", b)
	}
	// A crashed writer's temp file is not a record.
	if err := os.WriteFile(filepath.Join(d.Path, ".tmp-b.json-123"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.Write("c.json", nil); err != nil {
		t.Fatal(err)
	}
	got, err := d.List()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a.json", "c.json"}, got); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
}

func TestWriteErrors(t *testing.T) {
	base := t.TempDir()
	tests := []struct {
		name    string
		setup   func() Dir
		rec     string
		wantErr string
	}{
		{"bad name slash", func() Dir { return Dir{Path: base} }, "../x", "not a plain file name"},
		{"bad name dot", func() Dir { return Dir{Path: base} }, ".hidden", "not a plain file name"},
		{"missing dir", func() Dir { return Dir{Path: filepath.Join(base, "nope")} }, "x", "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.setup().Write(tt.rec, []byte("x"))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestEnsureRefusesOpenDirs(t *testing.T) {
	p := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(p, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := (Dir{Path: p}).Ensure(); err == nil || !strings.Contains(err.Error(), "chmod 0700") {
		t.Fatalf("err = %v, want refusal", err)
	}
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o600)
	if err := (Dir{Path: f}).Ensure(); err == nil {
		t.Fatal("a file accepted as spool directory")
	}
}

func TestReplaceAndCopyInto(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	for _, v := range []string{"one", "two"} {
		if err := d.Replace("state.json", []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(d.Path, "state.json")); string(b) != "two" {
		t.Errorf("replace kept %q", b)
	}
	dest := t.TempDir()
	if err := CopyInto(dest, "rec.json", strings.NewReader("payload"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir(dest); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dest, "rec.json"))
	if err != nil || st.Mode().Perm() != 0o644 || st.Size() != int64(len("payload")) {
		t.Fatalf("copy: %v %v", st, err)
	}
	if err := CopyInto(dest, "../x", strings.NewReader(""), 0o644); err == nil {
		t.Error("a path accepted as a name")
	}
	if left, _ := filepath.Glob(filepath.Join(dest, ".tmp-*")); len(left) != 0 {
		t.Errorf("temp files left: %v", left)
	}
}

// TestReplaceFile: a hidden file that is no record (CopyInto refuses its
// name) is replaced whole, with its mode, and no temporary file stays.
func TestReplaceFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".pyxis_a.gpusuite.json")
	for _, body := range []string{"first\n", "second, longer\n"} {
		if err := ReplaceFile(path, strings.NewReader(body), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != body {
			t.Errorf("content %q, want %q", got, body)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files in the directory, want the one", len(ents))
	}
	if err := CopyInto(dir, ".hidden", strings.NewReader("x"), 0o600); err == nil {
		t.Errorf("CopyInto of a hidden name: no error, want it refused")
	}
}
