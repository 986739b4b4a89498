package container

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// Level is how serious a Finding is.
type Level int

// Levels of a Finding.
const (
	OK Level = iota
	Warn
	Fail
)

func (l Level) String() string {
	switch l {
	case OK:
		return "ok"
	case Warn:
		return "warning"
	default:
		return "error"
	}
}

// Finding is the result of one preflight check: what is wrong and what to
// do about it.
type Finding struct {
	Level Level
	Check string
	Msg   string
	Fix   string
}

// Line writes the finding as the one line a user reads.
func (f Finding) Line() string {
	if f.Fix == "" {
		return f.Msg
	}
	return f.Msg + "; fix: " + f.Fix
}

// Error makes a failing finding usable as an error.
func (f Finding) Error() string { return f.Line() }

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// CheckSrun explains a missing srun.
func CheckSrun(lookErr error) *Finding {
	if lookErr == nil {
		return nil
	}
	return &Finding{Level: Fail, Check: "srun", Msg: "srun is not on PATH, so no job can be submitted from here", Fix: "run this on a head server (Slurm's client, Debian package slurm-client, is installed there) or add Slurm's bin directory to PATH"}
}

// PyxisOptions are the srun options sbuild and srun-wrap rely on.
var PyxisOptions = []string{"--container-image", "--container-name", "--container-mounts", "--container-workdir", "--container-writable", "--container-remap-root", "--container-save", "--container-env"}

// CheckPyxis reads the output of `srun --help` for pyxis's options.
// runErr is the error of running it, output its stdout and stderr.
func CheckPyxis(output string, runErr error) *Finding {
	if strings.Contains(output, "Could not establish a configuration source") || strings.Contains(output, "Unable to contact slurm controller") {
		return &Finding{Level: Fail, Check: "pyxis", Msg: "srun cannot read the Slurm configuration: " + firstLine(output), Fix: "check that SLURM_CONF points to the cluster's slurm.conf (or /etc/slurm/slurm.conf exists) and munge is running"}
	}
	if !strings.Contains(output, "--container-image") {
		if runErr != nil && output == "" {
			return &Finding{Level: Fail, Check: "pyxis", Msg: fmt.Sprintf("`srun --help` failed: %v", runErr), Fix: "check that srun works here (srun --version)"}
		}
		return &Finding{Level: Fail, Check: "pyxis", Msg: "the pyxis plugin is not loaded: `srun --help` lists no --container-image option", Fix: "ask the administrators to install pyxis and add it to plugstack.conf on this server and the GPU servers"}
	}
	var missing []string
	for _, o := range PyxisOptions {
		if !strings.Contains(output, o) {
			missing = append(missing, o)
		}
	}
	if len(missing) > 0 {
		return &Finding{Level: Fail, Check: "pyxis", Msg: "the installed pyxis is too old: `srun --help` lacks " + strings.Join(missing, ", "), Fix: "ask the administrators for pyxis 0.15 or later"}
	}
	return nil
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// FSInfo is what statfs says about a directory.
type FSInfo struct {
	// Type is statfs's f_type magic.
	Type int64
	// Avail is the bytes an unprivileged user may still write.
	Avail uint64
}

// NFSMagic is statfs's f_type for NFS.
const NFSMagic = 0x6969

// CheckStorage looks at one enroot directory. what names it ("data path"),
// key its enroot variable. A directory on NFS is a warning; less free
// space than minFree bytes is an error.
func CheckStorage(what, key, path string, info FSInfo, statErr error, minFree uint64) *Finding {
	if statErr != nil {
		if isNotExist(statErr) {
			return nil // created on first use; nothing to check yet
		}
		return &Finding{Level: Warn, Check: "storage", Msg: fmt.Sprintf("cannot check enroot %s %s: %v", what, path, statErr)}
	}
	if info.Avail < minFree {
		return &Finding{Level: Fail, Check: "storage", Msg: fmt.Sprintf("enroot %s %s has only %s free; an unpacked image needs about %s and the pull fails half-way with \"No space left on device\" or a quota error", what, path, human(info.Avail), human(minFree)),
			Fix: fmt.Sprintf("free space with `sbuild prune` or `sbuild rm NAME`, or point %s at a larger disk", key)}
	}
	if info.Type == NFSMagic {
		return &Finding{Level: Warn, Check: "storage", Msg: fmt.Sprintf("enroot %s %s is on NFS: unpacking is slow and files of the remapped root may be refused (root_squash)", what, path),
			Fix: fmt.Sprintf("if creation fails with \"Permission denied\", set %s to node-local storage", key)}
	}
	return nil
}

// CheckScope explains why a job-scoped pyxis cannot keep a container.
func CheckScope(scope string) *Finding {
	if scope == "job" {
		return &Finding{Level: Fail, Check: "scope", Msg: "pyxis on this cluster uses container_scope=job, so a named container is removed when its job ends and sbuild cannot keep it",
			Fix: "keep the image as a file instead: sbuild --save ~/NAME.sqsh, then srun --container-image=~/NAME.sqsh; or ask the administrators for container_scope=global"}
	}
	return nil
}

func human(b uint64) string {
	const gib = 1 << 30
	switch {
	case b >= gib:
		return fmt.Sprintf("%.1f GiB", float64(b)/gib)
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	default:
		return fmt.Sprintf("%d B", b)
	}
}
