package container

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// CommentPrefix marks the jobs sbuild and srun-wrap submit, in Slurm's job
// comment, so that `sbuild rm` can see which container a running job uses.
const CommentPrefix = "gpusuite-container="

// Job holds the srun options both commands share.
type Job struct {
	// Name is the container name without the pyxis_ prefix.
	Name string
	// Project is the absolute project directory, mounted at Workdir.
	Project string
	Workdir string
	// GPUs is asked with --gpus when positive and the user gave no GPU option.
	GPUs      int
	Partition string
	Time      string
	// SiteArgs come from the configuration, UserArgs from the command line;
	// the user's come later so they win.
	SiteArgs []string
	UserArgs []string
	// Mounts are added after the project mount.
	Mounts []Mount
	// Env lists variables the container must take from the job's
	// environment (pyxis's --container-env).
	Env []string
}

func (j Job) slurmArgs() []string {
	var a []string
	gpuSet := HasOption(j.UserArgs, "gpus", 'G') || HasOption(j.UserArgs, "gres", 0) ||
		HasOption(j.UserArgs, "gpus-per-node", 0) || HasOption(j.UserArgs, "gpus-per-task", 0) ||
		HasOption(j.SiteArgs, "gpus", 'G') || HasOption(j.SiteArgs, "gres", 0)
	if j.GPUs > 0 && !gpuSet {
		a = append(a, fmt.Sprintf("--gpus=%d", j.GPUs))
	}
	if j.Partition != "" && !HasOption(j.UserArgs, "partition", 'p') {
		a = append(a, "--partition="+j.Partition)
	}
	if j.Time != "" && !HasOption(j.UserArgs, "time", 't') {
		a = append(a, "--time="+j.Time)
	}
	return a
}

func (j Job) containerArgs() []string {
	mounts := append([]Mount{{Src: j.Project, Dst: j.Workdir}}, j.Mounts...)
	a := []string{
		"--container-mounts=" + JoinMounts(mounts),
		"--container-workdir=" + j.Workdir,
	}
	if len(j.Env) > 0 {
		env := append([]string(nil), j.Env...)
		sort.Strings(env)
		a = append(a, "--container-env="+strings.Join(env, ","))
	}
	return a
}

func (j Job) comment() []string {
	if HasOption(j.UserArgs, "comment", 0) || HasOption(j.SiteArgs, "comment", 0) {
		return nil
	}
	return []string{"--comment=" + CommentPrefix + j.Name}
}

// RunArgv is srun-wrap's srun command line: cmd in the named container.
// pty adds --pty for an interactive shell.
func RunArgv(j Job, pty bool, cmd []string) []string {
	a := []string{"srun"}
	a = append(a, j.slurmArgs()...)
	a = append(a, j.SiteArgs...)
	a = append(a, j.UserArgs...)
	a = append(a, j.comment()...)
	a = append(a, "--container-name="+j.Name)
	a = append(a, j.containerArgs()...)
	if pty && !HasOption(j.UserArgs, "pty", 0) {
		a = append(a, "--pty")
	}
	return append(a, cmd...)
}

// Build describes one sbuild run.
type Build struct {
	Job
	// Ref is the image reference as pyxis gets it.
	Ref string
	// Save is --container-save's path, if any.
	Save string
	// SetupCmd runs inside the new container; empty means `true`.
	SetupCmd []string
}

// BuildArgv is sbuild's srun command line. The :create flag makes pyxis
// fail rather than silently reuse an existing container.
func BuildArgv(b Build) []string {
	a := []string{"srun"}
	a = append(a, b.slurmArgs()...)
	a = append(a, b.SiteArgs...)
	a = append(a, b.UserArgs...)
	a = append(a, b.comment()...)
	a = append(a,
		"--container-image="+b.Ref,
		"--container-name="+b.Name+":create",
		"--container-writable",
		"--container-remap-root",
	)
	a = append(a, b.containerArgs()...)
	if b.Save != "" {
		a = append(a, "--container-save="+b.Save)
	}
	if len(b.SetupCmd) == 0 {
		return append(a, "true")
	}
	return append(a, b.SetupCmd...)
}

// ScriptCommand returns how to run script (an absolute path) inside the
// container and any mount it needs. A script inside the project directory
// is run by its path relative to the working directory; one outside is
// mounted read-only at its own path. The interpreter comes from the
// script's "#!" line, so the script needs no execute bit; without one it
// runs under bash.
func ScriptCommand(script, project string, firstLine string) ([]string, []Mount, error) {
	var interp []string
	if strings.HasPrefix(firstLine, "#!") {
		interp = strings.Fields(strings.TrimSpace(firstLine[2:]))
	}
	if len(interp) == 0 {
		interp = []string{"bash"}
	}
	rel, err := filepath.Rel(project, script)
	if err == nil && !strings.HasPrefix(rel, "..") {
		return append(interp, "./"+rel), nil, nil
	}
	if err := CheckPath("script path", script); err != nil {
		return nil, nil, err
	}
	return append(interp, script), []Mount{{Src: script, Dst: script, ReadOnly: true}}, nil
}

// BatchScript is the script srun-wrap --batch hands to sbatch: the user's
// #SBATCH lines, then one srun that runs the user's script in the
// container. Every word is shell-quoted, so '#', spaces and '$' in paths,
// names or arguments reach srun unchanged instead of starting a comment or
// being expanded.
func BatchScript(j Job, scriptPath string, directives []string, cmd []string) string {
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	for _, d := range directives {
		b.WriteString(d + "\n")
	}
	// Quote writes the path on one line, so it cannot end the comment.
	fmt.Fprintf(&b, "# generated by srun-wrap --batch from %s for container %s\n", Quote(scriptPath), Prefix+j.Name)
	b.WriteString("exec " + QuoteArgs(BatchSrunArgv(j, cmd)) + "\n")
	return b.String()
}

// BatchSrunArgv is the srun command line BatchScript runs inside the job.
func BatchSrunArgv(j Job, cmd []string) []string {
	argv := []string{"srun"}
	argv = append(argv, j.SiteArgs...)
	argv = append(argv, "--container-name="+j.Name)
	argv = append(argv, j.containerArgs()...)
	return append(argv, cmd...)
}

// BatchArgv is the sbatch command line for BatchScript, which sbatch reads
// from its standard input.
func BatchArgv(j Job) []string {
	a := []string{"sbatch"}
	a = append(a, j.slurmArgs()...)
	a = append(a, j.UserArgs...)
	a = append(a, j.comment()...)
	if !HasOption(j.UserArgs, "chdir", 'D') {
		a = append(a, "--chdir="+j.Project)
	}
	return a
}

// Directives returns the leading #SBATCH lines of a script: sbatch reads
// them up to the first command, and so does srun-wrap.
func Directives(script string) []string {
	var out []string
	for i, line := range strings.Split(script, "\n") {
		t := strings.TrimSpace(line)
		if i == 0 && strings.HasPrefix(t, "#!") {
			continue
		}
		if strings.HasPrefix(t, "#SBATCH") {
			out = append(out, t)
			continue
		}
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		break
	}
	return out
}
