package container

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/testkit/cmdline"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestCommandLines(t *testing.T) {
	job := Job{Name: "proj", Project: "/data/home/u/proj", Workdir: "/workspace", GPUs: 1, Partition: "gpu", Time: "4:00:00",
		SiteArgs: []string{"--mpi=pmix"}, Mounts: []Mount{{Src: "/data", Dst: "/data", ReadOnly: true}}, Env: []string{"WANDB_API_KEY", "A"}}
	var b strings.Builder
	b.WriteString("# srun-wrap python train.py\n" + QuoteArgs(RunArgv(job, false, []string{"python", "train.py", "--note", "a b#c"})) + "\n")
	b.WriteString("# srun-wrap (interactive)\n" + QuoteArgs(RunArgv(job, true, []string{"bash", "-i"})) + "\n")
	user := job
	user.UserArgs = []string{"-p", "long", "--gres=gpu:2", "-t", "10", "--comment=mine"}
	b.WriteString("# user options replace the defaults\n" + QuoteArgs(RunArgv(user, false, []string{"true"})) + "\n")
	bl := Build{Job: job, Ref: "nvcr.io#nvidia/pytorch:24.05-py3", Save: "/data/home/u/proj.sqsh", SetupCmd: []string{"bash", "./setup.sh"}}
	bl.Env = nil
	bl.GPUs = 0
	b.WriteString("# sbuild --setup setup.sh --save\n" + QuoteArgs(BuildArgv(bl)) + "\n")
	bl.SetupCmd, bl.Save = nil, ""
	b.WriteString("# sbuild\n" + QuoteArgs(BuildArgv(bl)) + "\n")
	b.WriteString("# srun-wrap --batch\n" + QuoteArgs(BatchArgv(job)) + "\n")
	b.WriteString(BatchScript(job, "/data/home/u/proj/run #1.sh", []string{"#SBATCH --time=10"}, []string{"bash", "./run #1.sh", "$HOME", "it's"}))
	cmdline.Golden(t, filepath.Join("testdata", "commandlines.golden"), b.String(), *update)
}

func TestScriptCommand(t *testing.T) {
	for _, tc := range []struct {
		name, script, first string
		want                []string
		mounts              []Mount
		err                 string
	}{
		{name: "inside, no shebang", script: "/p/setup.sh", want: []string{"bash", "./setup.sh"}},
		{name: "inside, python", script: "/p/tools/s.py", first: "#!/usr/bin/env python3", want: []string{"/usr/bin/env", "python3", "./tools/s.py"}},
		{name: "outside", script: "/home/u/s.sh", first: "#!/bin/sh -e", want: []string{"/bin/sh", "-e", "/home/u/s.sh"}, mounts: []Mount{{Src: "/home/u/s.sh", Dst: "/home/u/s.sh", ReadOnly: true}}},
		{name: "outside with colon", script: "/home/u/a:b.sh", err: "cannot mount"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, m, err := ScriptCommand(tc.script, "/p", tc.first)
			if wantErr(t, err, tc.err) {
				return
			}
			if d := cmp.Diff(tc.want, got); d != "" || !cmp.Equal(tc.mounts, m) || err != nil {
				t.Errorf("(-want +got)\n%s mounts %v err %v", d, m, err)
			}
		})
	}
}
