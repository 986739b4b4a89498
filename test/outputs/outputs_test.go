// Package outputs runs every program of the suite as a user runs it, the
// built binaries under GPUSUITE_BIN (bin/ and bin/simulated/, which make
// test builds first), over a corpus of command lines: each command's
// --help, --version, usage errors and their exit codes, and the
// data-bearing outputs over fixed ledgers and fixed live boards. It
// compares each run's exit code, stdout, stderr and the files it writes
// with testdata/<case>.golden, byte for byte. The goldens were recorded
// from the binaries of an earlier commit (see the commit that added
// them), so a move of code that changes what a user sees fails here.
//
// What a run cannot hold fixed is normalised, one substring kind at a
// time, and nothing else:
//   - the test's temporary directory is written $DIR, the binaries'
//     directory $BIN, serve's address $ADDR and the demo's scratch
//     cluster directory /dev/shm/gpusuite-demo-cluster-$N;
//   - the build's git revision in --version is written REV, and the Go
//     release that built it GO;
//   - in cases marked clock (the live board, notes, check, the hooks'
//     records, serve's pages: outputs about now), a fixture time the
//     test wrote is written by its name (<now-10m>), in every layout the
//     programs print and in Unix milliseconds; any other timestamp, Unix
//     second or Unix millisecond within two days of now is a program's
//     own clock and has its digits written # (and a timestamp its
//     fraction of a second dropped: a clock's nanoseconds lose their
//     trailing zeros); a duration before " ago" ("12m50s ago", "1 s
//     ago") and a JSON "..._s" field are rounded down to five minutes
//     (a program runs a moment after the test wrote its fixture, or
//     after the demo); a simulated GPU's energy counter, which counts on
//     with the clock, is written #; the board's last-hour strips,
//     whose marks depend on the minute the page is read in, are written
//     <strip>, and their runs' minutes HH:MM (their content is tested on
//     a fixed clock in internal/web).
//
// The live board's fixture is written again at a new now just before its
// first case and before serve starts, so that a slow machine's earlier
// cases cannot age it. Slurm's, enroot's and NVIDIA's programs are stubs
// that fail (see stubs), so that no case depends on what this machine
// runs or whether make test's Slurm is up.
//
// Run with -update to rewrite the goldens from the binaries under test.
package outputs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/testkit/cmdline"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the binaries under test")

// maxOutput bounds what one command may print (stdout and stderr each)
// and what a file it writes may hold in a golden.
const maxOutput = 4 << 20

// runTimeout bounds one command.
const runTimeout = 2 * time.Minute

// binDir is where the binaries are: GPUSUITE_BIN (make test sets it), else
// the repository's bin/. It fails the test when they are missing under
// make test (GPUSUITE_REQUIRE_SLURM=1) and skips it otherwise.
func binDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("GPUSUITE_BIN")
	if dir == "" {
		abs, err := filepath.Abs(filepath.Join("..", "..", "bin"))
		if err != nil {
			t.Fatal(err)
		}
		dir = abs
	}
	var missing []string
	for _, b := range binaries {
		for _, p := range []string{filepath.Join(dir, b), filepath.Join(dir, "simulated", b)} {
			if _, err := os.Stat(p); err != nil {
				missing = append(missing, p)
			}
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("binaries missing (%s): run make build build-simulated, or set GPUSUITE_BIN", strings.Join(missing, ", "))
		if os.Getenv("GPUSUITE_REQUIRE_SLURM") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

// binaries are the programs the Makefile builds.
var binaries = []string{"sbuild", "srun-wrap", "prolog", "epilog", "hook-gpus", "gpuacct", "nfs-sync"}

// stubs are the outside programs the suite may run.
var stubs = []string{"scontrol", "squeue", "sinfo", "sacct", "sacctmgr", "srun", "sbatch", "scancel", "enroot", "nvidia-smi"}

// tcase is one command line of the corpus.
type tcase struct {
	name  string   // golden file name
	bin   string   // a binary of bin/, or sim/NAME for bin/simulated/NAME
	args  []string // after {{...}} expansion
	stdin string
	env   []string // added to the base environment, after expansion
	dir   string   // working directory under $DIR ("" : $DIR)
	files []string // globs under $DIR whose contents join the golden
	clock bool     // the output speaks of now: normalise the clock
	// rewind: take now again and rewrite the fixture before this case
	// (the first of the cases about the live board)
	rewind bool
}

// world is the fixture every case runs in.
type world struct {
	dir, bin, user string
	now            time.Time
	times          map[string]time.Time // fixture times by name, e.g. "now-10m"
}

var placeholder = regexp.MustCompile(`\{\{(now(?:[+-][0-9hms]+)?)(?::([a-z]+))?\}\}`)

// expand fills {{dir}}, {{bin}}, {{user}} (the test's) and {{now±D[:form]}} (form: rfc, day,
// flag; default RFC 3339 with nanoseconds) and records the times it used.
func (w *world) expand(s string) string {
	s = strings.NewReplacer("{{dir}}", w.dir, "{{bin}}", w.bin, "{{user}}", w.user).Replace(s)
	return placeholder.ReplaceAllStringFunc(s, func(m string) string {
		sub := placeholder.FindStringSubmatch(m)
		at := w.now
		if off := strings.TrimPrefix(sub[1], "now"); off != "" {
			d, err := time.ParseDuration(strings.TrimPrefix(off, "+"))
			if err != nil {
				panic(fmt.Sprintf("fixture time %s: %v", m, err))
			}
			at = at.Add(d)
		}
		w.times[sub[1]] = at
		switch sub[2] {
		case "flag":
			return at.UTC().Format("2006-01-02T15:04:05")
		case "rfc":
			return at.UTC().Format(time.RFC3339)
		default:
			return at.UTC().Format(time.RFC3339Nano)
		}
	})
}

var (
	revision     = regexp.MustCompile(`revision: [0-9a-f]+\)`)
	goVersion    = regexp.MustCompile(`(?m)^(  go version: +)go\S+$`)
	scratch      = regexp.MustCompile(`/dev/shm/gpusuite-demo-cluster-[0-9]+`)
	timestamp    = regexp.MustCompile(`\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)?`)
	ago          = regexp.MustCompile(`\b\d+(?:\.\d+)?(?:h|ms|µs|m|s)(?: ?\d+(?:\.\d+)?(?:h|ms|µs|m|s))* ago`)
	epoch        = regexp.MustCompile(`\b\d{13}\b|\b\d{10}\b`)
	agoWords     = regexp.MustCompile(`\b\d+ (?:s|min|h) ago`)
	jsonDuration = regexp.MustCompile(`("[a-z_]+_s": ?)(\d+(?:\.\d+)?)`)
	digit        = regexp.MustCompile(`\d`)
	fraction     = regexp.MustCompile(`\.\d+`)
	energy       = regexp.MustCompile(`("energy_mj": ?)\d+`)
	strip        = regexp.MustCompile(`<span class="strip"[^>]*>(?:<span[^>]*>[^<]*</span>)*</span>`)
	stripRun     = regexp.MustCompile(`(<p class="run">)\d\d:\d\d–\d\d:\d\d`)
)

// normalise writes what a run cannot hold fixed as the package comment
// says.
func (w *world) normalise(s string, clock bool) string {
	s = strings.ReplaceAll(s, w.bin, "$BIN")
	s = strings.ReplaceAll(s, w.dir, "$DIR")
	s = scratch.ReplaceAllString(s, "/dev/shm/gpusuite-demo-cluster-$$N")
	s = revision.ReplaceAllString(s, "revision: REV)")
	s = goVersion.ReplaceAllString(s, "${1}GO")
	if !clock {
		return s
	}
	// The fixture's own times, longest spelling first, by name.
	type named struct{ text, name string }
	var known []named
	for name, at := range w.times {
		for _, layout := range []string{time.RFC3339Nano, time.RFC3339, "2006-01-02T15:04:05", "2006-01-02 15:04:05 MST", "2006-01-02 15:04:05", "2006-01-02 15:04"} {
			known = append(known, named{at.UTC().Format(layout), "<" + name + ">"})
		}
		// As the dashboard's scripts take them: Unix milliseconds.
		known = append(known, named{strconv.FormatInt(at.UnixMilli(), 10), "<" + name + ">"})
	}
	sort.Slice(known, func(i, j int) bool {
		if len(known[i].text) != len(known[j].text) {
			return len(known[i].text) > len(known[j].text)
		}
		return known[i].text < known[j].text
	})
	for _, k := range known {
		s = strings.ReplaceAll(s, k.text, k.name)
	}
	s = timestamp.ReplaceAllStringFunc(s, func(m string) string {
		at, err := time.Parse("2006-01-02", m[:10])
		if err != nil || at.Sub(w.now) > 48*time.Hour || w.now.Sub(at) > 72*time.Hour {
			return m
		}
		return digit.ReplaceAllString(fraction.ReplaceAllString(m, ""), "#")
	})
	s = epoch.ReplaceAllStringFunc(s, func(m string) string {
		n, err := strconv.ParseInt(m, 10, 64)
		if err != nil {
			return m
		}
		at := time.Unix(n, 0)
		if len(m) == 13 {
			at = time.UnixMilli(n)
		}
		if at.Sub(w.now).Abs() > 48*time.Hour {
			return m
		}
		return digit.ReplaceAllString(m, "#")
	})
	s = ago.ReplaceAllStringFunc(s, func(m string) string {
		d, err := time.ParseDuration(strings.ReplaceAll(strings.TrimSuffix(m, " ago"), " ", ""))
		if err != nil {
			return m
		}
		return fmt.Sprintf("~%s ago", d.Truncate(5*time.Minute))
	})
	s = agoWords.ReplaceAllStringFunc(s, func(m string) string {
		f := strings.Fields(m)
		n, err := strconv.Atoi(f[0])
		if err != nil {
			return m
		}
		d := time.Duration(n) * map[string]time.Duration{"s": time.Second, "min": time.Minute, "h": time.Hour}[f[1]]
		return fmt.Sprintf("~%s ago", d.Truncate(5*time.Minute))
	})
	s = energy.ReplaceAllString(s, "${1}#")
	s = strip.ReplaceAllString(s, "<strip>")
	s = stripRun.ReplaceAllString(s, "${1}HH:MM–HH:MM")
	return jsonDuration.ReplaceAllStringFunc(s, func(m string) string {
		sub := jsonDuration.FindStringSubmatch(m)
		v, err := strconv.ParseFloat(sub[2], 64)
		if err != nil {
			return m
		}
		return fmt.Sprintf("%s\"~%dm\"", sub[1], int64(v)/300*5)
	})
}

// env is the environment every command runs in, extra (expanded) last:
// none of the test's own, so that nothing of the machine leaks in.
func (w *world) env(extra []string) []string {
	env := []string{
		"PATH=" + filepath.Join(w.dir, "stubs") + ":/usr/bin:/bin", "HOME=" + filepath.Join(w.dir, "home"), "TZ=UTC", "LANG=C.UTF-8",
		"USER=" + w.user, "GPUSUITE_CONFIG=" + filepath.Join(w.dir, "gpusuite.toml"),
	}
	for _, e := range extra {
		env = append(env, w.expand(e))
	}
	return env
}

// run runs one case and returns what its golden holds.
func (w *world) run(t *testing.T, c tcase) string {
	t.Helper()
	path := filepath.Join(w.bin, c.bin)
	if rest, ok := strings.CutPrefix(c.bin, "sim/"); ok {
		path = filepath.Join(w.bin, "simulated", rest)
	}
	args := make([]string, len(c.args))
	for i, a := range c.args {
		args[i] = w.expand(a)
	}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = filepath.Join(w.dir, c.dir)
	cmd.Env = w.env(c.env)
	cmd.Stdin = strings.NewReader(w.expand(c.stdin))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &bounded{b: &stdout}, &bounded{b: &stderr}
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok || ctx.Err() != nil {
			t.Fatalf("%s %s: %v (stderr: %s)", c.bin, strings.Join(args, " "), err, stderr.String())
		}
		code = ee.ExitCode()
	}
	if stdout.Len() > maxOutput || stderr.Len() > maxOutput {
		t.Fatalf("%s %s printed more than %d bytes", c.bin, strings.Join(args, " "), maxOutput)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "$ %s %s\nexit %d\n--- stdout\n%s--- stderr\n%s", c.bin, strings.Join(c.args, " "), code, stdout.String(), stderr.String())
	for _, g := range c.files {
		matches, err := filepath.Glob(filepath.Join(w.dir, w.expand(g)))
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(matches)
		for _, m := range matches {
			fmt.Fprintf(&b, "--- file %s\n%s", m, fileText(t, m))
		}
	}
	return w.normalise(b.String(), c.clock)
}

// fileText is a written file as its golden holds it: text as is, binary
// data (a PNG) as its size and SHA-256.
func fileText(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > maxOutput {
		t.Fatalf("%s: %d bytes, more than %d", path, fi.Size(), maxOutput)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.IndexByte(data, 0) >= 0 || strings.HasSuffix(path, ".png") {
		return fmt.Sprintf("%d bytes, sha256 %x\n", len(data), sha256.Sum256(data))
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		data = append(data, "\n(no newline at end)\n"...)
	}
	return string(data)
}

// bounded stops keeping output past maxOutput+1 bytes, so a runaway
// command cannot exhaust memory; run reports the overflow.
type bounded struct{ b *bytes.Buffer }

func (w *bounded) Write(p []byte) (int, error) {
	if room := maxOutput + 1 - w.b.Len(); room < len(p) {
		if room > 0 {
			w.b.Write(p[:room])
		}
		return len(p), nil
	}
	return w.b.Write(p)
}

// setup writes the fixture: the configuration, the board's live
// snapshots and Slurm view, and the scratch directories; the demo's
// ledger is built by the corpus' first case.
func setup(t *testing.T, bin string) *world {
	t.Helper()
	dir := t.TempDir()
	// A symlinked TMPDIR would print two spellings of one path.
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	w := &world{dir: dir, bin: bin, user: u.Username, now: time.Now().UTC(), times: map[string]time.Time{}}
	for _, d := range []string{"home", "proj/myproj", "board/live", "board/incoming", "board/quarantine", "board/requests",
		"spool", "stubs", "demo-incoming", "quarantine", "requests", "export", "nfs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Slurm's, enroot's and NVIDIA's programs answer as on a machine
	// without them, whatever this machine has: the same outputs under
	// make test, whose Slurm runs, and outside it.
	for _, name := range stubs {
		script := fmt.Sprintf("#!/bin/sh\necho \"%s: not on this machine (test/outputs)\" >&2\nexit 1\n", name)
		if err := os.WriteFile(filepath.Join(dir, "stubs", name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w.writeFixture(t)
	return w
}

// writeFixture writes the files of testdata/fixture, {{...}} expanded
// at w.now, at the same place under $DIR.
func (w *world) writeFixture(t *testing.T) {
	t.Helper()
	src := filepath.Join("testdata", "fixture")
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(w.dir, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(p, ".sh") {
			mode = 0o755
		}
		return os.WriteFile(dst, []byte(w.expand(string(data))), mode)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rewind takes now again and rewrites the fixture at it, so that the
// cases after it see the fixture's times as fresh as the first case did
// however long the cases before took (a busy machine).
func (w *world) rewind(t *testing.T) {
	t.Helper()
	w.now, w.times = time.Now().UTC(), map[string]time.Time{}
	w.writeFixture(t)
}

// check compares got with testdata/name.golden, or writes it there
// under -update.
func (w *world) check(t *testing.T, name, got string) {
	t.Helper()
	cmdline.Golden(t, filepath.Join("testdata", name+".golden"), got, *update)
}

func TestOutputs(t *testing.T) {
	bin := binDir(t)
	start := time.Now()
	w := setup(t, bin)
	seen := map[string]bool{}
	for _, c := range corpus() {
		if seen[c.name] {
			t.Fatalf("two cases named %s", c.name)
		}
		seen[c.name] = true
		if c.rewind {
			w.rewind(t)
		}
		// Each case runs in order (later ones read what earlier ones
		// wrote), so a failed one is reported and the rest go on.
		t.Run(c.name, func(t *testing.T) { w.check(t, c.name, w.run(t, c)) })
	}
	// The dashboard and API of gpuacct serve over the same ledger and a
	// fresh board.
	w.rewind(t)
	addr := w.serve(t)
	client := &http.Client{Timeout: runTimeout}
	for _, p := range pages() {
		name := "serve-" + p.name
		if seen[name] {
			t.Fatalf("two cases named %s", name)
		}
		seen[name] = true
		t.Run(name, func(t *testing.T) { w.check(t, name, w.get(t, client, addr, p)) })
	}
	if *update {
		// A case dropped from the corpus leaves no stale golden behind.
		old, err := filepath.Glob(filepath.Join("testdata", "*.golden"))
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range old {
			if !seen[strings.TrimSuffix(filepath.Base(g), ".golden")] {
				if err := os.Remove(g); err != nil {
					t.Fatal(err)
				}
			}
		}
	} else {
		goldens, err := filepath.Glob(filepath.Join("testdata", "*.golden"))
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range goldens {
			if !seen[strings.TrimSuffix(filepath.Base(g), ".golden")] {
				t.Errorf("%s has no case in the corpus", g)
			}
		}
	}
	t.Logf("%d cases in %v", len(seen), time.Since(start).Round(time.Millisecond))
}
