package containercmd

import (
	"bytes"
	"context"
	"github.com/aicloud/gpusuite/internal/container"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// hostileNames are project directory names that once broke the printed
// commands: a line "EOF" ended the heredoc and the rest ran as commands.
var hostileNames = map[string]string{
	"eof line":   "p\nEOF\ntouch pwned-eof\n",
	"quotes":     `p it's "q" \ \'`,
	"expansion":  "p $(touch pwned-sub) `touch pwned-bq` ${HOME} $HOME !! *",
	"non-utf8":   "p\xff\xfe\x80 end",
	"control":    "p\x1b[31m\r\t\x7f\x01",
	"delimiters": "p\nSRUN_WRAP_EOF\nSRUN_WRAP_EOF_1\n'EOF'\n",
	"unicode":    "p プロジェクト \u202e",
}

// fakeSlurm puts an sbatch and an srun on PATH that record their
// arguments (NUL-separated) and standard input in dir.
func fakeSlurm(t *testing.T) (bin, rec string) {
	t.Helper()
	bin, rec = t.TempDir(), t.TempDir()
	for _, p := range []string{"sbatch", "srun"} {
		sh := "#!/bin/sh\nprintf '%s\\0' \"$@\" > \"$REC/" + p + ".argv\"\ncat > \"$REC/" + p + ".stdin\"\n"
		if err := os.WriteFile(filepath.Join(bin, p), []byte(sh), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin, rec
}

// runBash runs script with bash in an empty directory, with the fake Slurm
// first on PATH, and says which files the script left there.
func runBash(t *testing.T, bin, rec, script string) []string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(t.TempDir(), "cmd.sh")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", "-n", path).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v: %s\nscript:\n%s", err, out, script)
	}
	cmd := exec.Command("bash", path)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "REC="+rec)
	cmd.Stdin = strings.NewReader("")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bash: %v: %s\nscript:\n%s", err, out, script)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	return left
}

func readArgv(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// checkPrintable fails on anything but printable characters and newlines
// in out: what is pasted must not drive the terminal.
func checkPrintable(t *testing.T, out string) {
	t.Helper()
	for i, r := range out {
		if r == utf8.RuneError || r != '\n' && !unicode.IsPrint(r) {
			t.Errorf("printed command has %q at byte %d: %q", r, i, out)
			return
		}
	}
}

// The commands srun-wrap --dry-run prints, run by bash with a fake srun
// and sbatch, hand them exactly what srun-wrap itself would, and nothing
// in the project's path runs, for paths with newlines, quotes, '$',
// backticks, "EOF" lines and bytes that are not UTF-8.
func TestDryRunIsSafeToPaste(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("bash is needed to run the printed commands")
	}
	for label, name := range hostileNames {
		t.Run(label, func(t *testing.T) {
			proj := filepath.Join(t.TempDir(), name)
			if err := os.Mkdir(proj, 0o755); err != nil {
				t.Fatal(err)
			}
			script := "#!/bin/bash\n#SBATCH --time=5\necho hi\n"
			if err := os.WriteFile(filepath.Join(proj, "train.sh"), []byte(script), 0o644); err != nil {
				t.Fatal(err)
			}
			data := t.TempDir()
			os.MkdirAll(filepath.Join(data, container.Prefix+container.NameFromDir(proj)), 0o755)
			env := map[string]string{"ENROOT_DATA_PATH": data}
			args := []string{"a b", "it's", "$(touch pwned-arg)", "x\nEOF\ny"}
			bin, rec := fakeSlurm(t)

			t.Run("batch", func(t *testing.T) {
				// What srun-wrap --batch hands sbatch itself.
				f := newFake(t, proj, env)
				var wantBody string
				f.sys.Run = func(_ context.Context, c container.Cmd) (int, error) {
					f.ran = append(f.ran, c.Argv)
					wantBody, _ = readAll(c.Stdin)
					return 0, nil
				}
				if code := SrunWrap(append([]string{"srun-wrap", "--batch", "train.sh"}, args...), f.sys); code != 0 || len(f.ran) != 1 {
					t.Fatalf("exit %d, ran %v: %s", code, f.ran, f.err.String())
				}
				d := newFake(t, proj, env)
				if code := SrunWrap(append([]string{"srun-wrap", "--batch", "--dry-run", "train.sh"}, args...), d.sys); code != 0 {
					t.Fatalf("dry run: exit %d: %s", code, d.err.String())
				}
				printed := d.out.String()
				checkPrintable(t, printed)
				if left := runBash(t, bin, rec, printed); len(left) != 0 {
					t.Errorf("the printed command made %v", left)
				}
				if diff := cmp.Diff(f.ran[0][1:], readArgv(t, filepath.Join(rec, "sbatch.argv"))); diff != "" {
					t.Errorf("sbatch arguments (-want +got)\n%s", diff)
				}
				got, err := os.ReadFile(filepath.Join(rec, "sbatch.stdin"))
				if err != nil || !bytes.Equal(got, []byte(wantBody)) {
					t.Fatalf("sbatch read %q (%v), want %q", got, err, wantBody)
				}
				// The job script in turn runs the intended srun.
				if left := runBash(t, bin, rec, string(got)); len(left) != 0 {
					t.Errorf("the job script made %v", left)
				}
				want := append([]string{"--container-name=" + container.NameFromDir(proj), "--container-mounts=" + proj + ":/workspace",
					"--container-workdir=/workspace", "/bin/bash", "./train.sh"}, args...)
				if diff := cmp.Diff(want, readArgv(t, filepath.Join(rec, "srun.argv"))); diff != "" {
					t.Errorf("srun arguments in the job (-want +got)\n%s", diff)
				}
			})
			t.Run("srun", func(t *testing.T) {
				f := newFake(t, proj, env)
				run := append([]string{"srun-wrap", "--env", "V=$(touch pwned-env)\nEOF", "python"}, args...)
				if code := SrunWrap(run, f.sys); code != 0 {
					t.Fatalf("exit %d: %s", code, f.err.String())
				}
				d := newFake(t, proj, env)
				if code := SrunWrap(append([]string{run[0], "--dry-run"}, run[1:]...), d.sys); code != 0 {
					t.Fatalf("dry run: exit %d: %s", code, d.err.String())
				}
				printed := d.out.String()
				checkPrintable(t, printed)
				if strings.Count(printed, "\n") != 1 {
					t.Errorf("printed %d lines, want one: %q", strings.Count(printed, "\n"), printed)
				}
				// The fake srun also prints V, to check the assignment.
				if left := runBash(t, bin, rec, printed+"printf %s \"$V\" > \"$REC/v\"\n"); len(left) != 0 {
					t.Errorf("the printed command made %v", left)
				}
				if diff := cmp.Diff(f.execd[1:], readArgv(t, filepath.Join(rec, "srun.argv"))); diff != "" {
					t.Errorf("srun arguments (-want +got)\n%s", diff)
				}
			})
		})
	}
}

func TestQuoteRoundTrip(t *testing.T) {
	for _, s := range []string{"", "plain", "a b", "it's", "\n", "\x00x"[1:], "\xff", "\\x41", "'\\''", "$'a'", "é\u202e\t"} {
		got, err := exec.Command("bash", "-c", `printf %s `+container.Quote(s)).Output()
		if err != nil || string(got) != s {
			t.Errorf("bash read Quote(%q) = %s as %q (%v)", s, container.Quote(s), got, err)
		}
		checkPrintable(t, container.Quote(s))
	}
	for _, tc := range []struct{ in, want string }{
		{"a\nb", `$'a\x0ab'`},
		{"it's\n", `$'it\'s\x0a'`},
		{"\xffé", `$'\xffé'`},
		{"プロジェクト", "'プロジェクト'"},
	} {
		if got := container.Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestFeedCommandDelimiter(t *testing.T) {
	for _, body := range []string{"a\n", "SRUN_WRAP_EOF\n", "SRUN_WRAP_EOF\nSRUN_WRAP_EOF_1\n", "no newline", "tab\there\n"} {
		bin, rec := fakeSlurm(t)
		runBash(t, bin, rec, container.FeedCommand([]string{"sbatch"}, body))
		got, err := os.ReadFile(filepath.Join(rec, "sbatch.stdin"))
		if err != nil || string(got) != body {
			t.Errorf("FeedCommand(%q): sbatch read %q (%v)", body, got, err)
		}
	}
}
