package container

import (
	"strings"
	"testing"

	"github.com/aicloud/gpusuite/internal/config"
)

// The [container] section of the shared configuration file.
func TestContainerConfig(t *testing.T) {
	cfg := config.Default()
	if err := config.Parse([]byte("[container]\nimage = \"nvcr.io#nvidia/pytorch:24.05-py3\"\ngpus = 2\nmounts = [\"/data:/data:ro\"]\nsrun_args = [\"--mpi=pmix\"]\nscope = \"global\"\ndata_path = \"/data/enroot/$USER\"\n"), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Container.GPUs != 2 || cfg.Container.Workdir != "/workspace" || !cfg.Container.CheckExists {
		t.Errorf("parsed %+v", cfg.Container)
	}
	for _, tc := range []struct{ toml, want string }{
		{"image = \"\"", `key "container.image": must not be empty`},
		{"gpus = -1", `key "container.gpus": -1 is outside 0..64`},
		{"build_gpus = 99", `key "container.build_gpus"`},
		{"workdir = \"ws\"", `key "container.workdir": "ws" must be an absolute path`},
		{"scope = \"user\"", `key "container.scope": "user" is not global or job`},
		{"mounts = [\"/a,b:/b\"]", `key "container.mounts": "/a,b:/b": pyxis cannot mount a path containing ','`},
		{"mounts = [\"/a\"]", `want SRC:DST`},
		{"mounts = [\"/a:rel\"]", `DST must be an absolute path`},
		{"mounts = [\"/a:/b:rx\"]", `flag "rx" is not ro or rw`},
		{"srun_args = [\"pmix\"]", `key "container.srun_args": "pmix" is not an option`},
		{"min_free_gib = -1", `key "container.min_free_gib"`},
		{"colour = 1", `unknown key "container.colour"`},
	} {
		t.Run(tc.toml, func(t *testing.T) {
			c := config.Default()
			err := config.Parse([]byte("[container]\n"+tc.toml+"\n"), &c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
