package config

import (
	"fmt"
	"strings"
)

// Container configures sbuild and srun-wrap: the site's defaults for
// building a project's enroot container through pyxis and running in it.
// Users override most keys with GPUSUITE_* variables or flags.
type Container struct {
	// Image is the image sbuild uses when none is given, in Docker form
	// (nvcr.io/nvidia/tensorflow:25.02-tf2-py3) or enroot form (nvcr.io#...).
	Image string `toml:"image"`
	// GPUs is the number of GPUs srun-wrap asks for (--gpus); 0 asks none.
	GPUs int `toml:"gpus"`
	// BuildGPUs is the number of GPUs the sbuild job asks for.
	BuildGPUs int `toml:"build_gpus"`
	// Partition is passed as --partition when set.
	Partition string `toml:"partition"`
	// Time is passed as --time when set (Slurm's formats: "60", "4:00:00").
	Time string `toml:"time"`
	// Mounts are added to every container, as SRC:DST or SRC:DST:ro.
	Mounts []string `toml:"mounts"`
	// SrunArgs are extra srun options added before the user's own.
	SrunArgs []string `toml:"srun_args"`
	// Workdir is where the project directory is mounted and the command
	// starts.
	Workdir string `toml:"workdir"`
	// Scope is pyxis's container_scope on this cluster: "global" keeps a
	// named container across jobs (what sbuild needs), "job" removes it at
	// the end of the job.
	Scope string `toml:"scope"`
	// DataPath is where this server sees the users' enroot data directory
	// (ENROOT_DATA_PATH on the GPU servers). Empty means enroot's own rules:
	// $ENROOT_DATA_PATH, enroot.conf, then ~/.local/share/enroot. "$HOME",
	// "$USER" and "$(id -u)" are expanded.
	DataPath string `toml:"data_path"`
	// CheckExists makes srun-wrap stop with a hint when the container is
	// not in DataPath. Turn it off where DataPath is not visible here.
	CheckExists bool `toml:"check_exists"`
	// EnrootConf is read for ENROOT_*_PATH settings.
	EnrootConf string `toml:"enroot_conf"`
	// EnrootVersion is the enroot version on the GPU servers; empty asks
	// `enroot version` here. Below 4, nvcr.io/x is rewritten to nvcr.io#x.
	EnrootVersion string `toml:"enroot_version"`
	// MinFreeGiB is the free space sbuild wants in the enroot data path.
	MinFreeGiB int `toml:"min_free_gib"`
}

func defaultContainer() Container {
	return Container{
		Image:       "nvcr.io/nvidia/tensorflow:25.02-tf2-py3",
		GPUs:        1,
		BuildGPUs:   0,
		Workdir:     "/workspace",
		Scope:       "global",
		CheckExists: true,
		EnrootConf:  "/etc/enroot/enroot.conf",
		MinFreeGiB:  20,
	}
}

func (c *Container) validate() error {
	if strings.TrimSpace(c.Image) == "" {
		return fmt.Errorf("key \"container.image\": must not be empty")
	}
	if c.GPUs < 0 || c.GPUs > 64 {
		return fmt.Errorf("key \"container.gpus\": %d is outside 0..64", c.GPUs)
	}
	if c.BuildGPUs < 0 || c.BuildGPUs > 64 {
		return fmt.Errorf("key \"container.build_gpus\": %d is outside 0..64", c.BuildGPUs)
	}
	if !strings.HasPrefix(c.Workdir, "/") || strings.ContainsAny(c.Workdir, ",:") {
		return fmt.Errorf("key \"container.workdir\": %q must be an absolute path without ',' or ':'", c.Workdir)
	}
	switch c.Scope {
	case "global", "job":
	default:
		return fmt.Errorf("key \"container.scope\": %q is not global or job (pyxis's container_scope)", c.Scope)
	}
	for _, m := range c.Mounts {
		if err := checkMount(m); err != nil {
			return fmt.Errorf("key \"container.mounts\": %q: %s", m, err)
		}
	}
	for _, a := range c.SrunArgs {
		if !strings.HasPrefix(a, "-") {
			return fmt.Errorf("key \"container.srun_args\": %q is not an option; write options as \"--name=value\"", a)
		}
	}
	if c.MinFreeGiB < 0 {
		return fmt.Errorf("key \"container.min_free_gib\": must not be negative")
	}
	return nil
}

// checkMount is the shape check of SRC:DST[:ro|rw]; internal/container
// parses mounts fully and says more.
func checkMount(m string) error {
	parts := strings.Split(m, ":")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return fmt.Errorf("want SRC:DST or SRC:DST:ro")
	}
	if strings.Contains(m, ",") {
		return fmt.Errorf("pyxis cannot mount a path containing ','")
	}
	if !strings.HasPrefix(parts[1], "/") {
		return fmt.Errorf("DST must be an absolute path")
	}
	if len(parts) == 3 && parts[2] != "ro" && parts[2] != "rw" {
		return fmt.Errorf("flag %q is not ro or rw", parts[2])
	}
	return nil
}
