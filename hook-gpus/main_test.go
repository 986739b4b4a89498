package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/aicloud/gpusuite/internal/agentproto"
	_ "github.com/aicloud/gpusuite/internal/sim/simulated" // requests below name gpu.backend = "simulated"
	"github.com/aicloud/gpusuite/internal/testkit/cmdline"
)

func TestVersionAndBogus(t *testing.T) {
	cmdline.VersionAndBogus(t, "hook-gpus", func(args []string, stdout, stderr *os.File) int {
		return run(args, strings.NewReader(""), stdout, stderr)
	}, "hook-gpus: flag provided but not defined: -bogus (run 'hook-gpus --help')\n")
}

func TestRun(t *testing.T) {
	for _, tt := range []struct {
		name     string
		args     []string
		in       string
		wantCode int
		wantOut  string // in stdout
		wantErr  string // all of stderr
	}{
		{name: "answers", in: `{"gpu":{"Backend":"simulated","Simulated":{"Count":2,"Model":"h200"}},"node":"gpu01","nvml_timeout":"1s","minors":[1]}`,
			wantOut: `"uuid":"GPU-`},
		{name: "no such backend is an answer", in: `{"gpu":{"Backend":"tpu"},"minors":[0]}`, wantOut: `"error":"gpu backend \"tpu\" is not built into this program`},
		{name: "help", args: []string{"--help"}, wantErr: "hook-gpus - answer a Slurm prolog or epilog"},
		{name: "arguments", args: []string{"0,1"}, wantCode: 2,
			wantErr: "hook-gpus: takes no arguments, it reads its request on standard input (run 'hook-gpus --help')\n"},
		{name: "garbage", in: "minors 0,1", wantCode: 1, wantErr: "hook-gpus: read request: invalid character 'm' looking for beginning of value\n"},
		{name: "empty", wantCode: 1, wantErr: "hook-gpus: read request: unexpected end of JSON input\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(append([]string{"hook-gpus"}, tt.args...), strings.NewReader(tt.in), &out, &errb)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.wantCode, errb.String())
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("stdout %q lacks %q", out.String(), tt.wantOut)
			}
			if tt.name == "help" {
				if !strings.HasPrefix(errb.String(), tt.wantErr) {
					t.Errorf("help %q", errb.String())
				}
			} else if errb.String() != tt.wantErr {
				t.Errorf("stderr %q, want %q", errb.String(), tt.wantErr)
			}
			if tt.wantCode == 0 && tt.name != "help" {
				var r agentproto.Response
				if err := json.Unmarshal(out.Bytes(), &r); err != nil {
					t.Errorf("answer is not a response: %v", err)
				}
			}
		})
	}
}

// The --help example runs: its request is answered (here, without a
// driver, by NVML's error; on a GPU server by the GPUs).
func TestHelpExampleRuns(t *testing.T) {
	var out, errb bytes.Buffer
	run([]string{"hook-gpus", "--help"}, strings.NewReader(""), &out, &errb)
	_, rest, ok := strings.Cut(errb.String(), "   echo '")
	req, _, ok2 := strings.Cut(rest, "' | hook-gpus\n")
	if !ok || !ok2 {
		t.Fatalf("no example in --help:\n%s", errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"hook-gpus"}, strings.NewReader(req), &out, &errb); code != 0 {
		t.Fatalf("example exits %d: %s", code, errb.String())
	}
	var r agentproto.Response
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || len(r.GPUs) != 2 && r.Error == "" {
		t.Errorf("example's answer %q (%v): want two GPUs or NVML's error", out.String(), err)
	}
}
