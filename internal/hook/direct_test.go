package hook

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/agentproto"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/hookgpus"
)

// helperEnv makes this test binary, run again by askHelper, act as
// hook-gpus in the way the variable names.
const helperEnv = "GPUSUITE_TEST_HOOK_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "serve":
		if err := hookgpus.Serve(context.Background(), os.Stdin, os.Stdout, hookgpus.OpenConfigured); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "hang":
		// a sleep, not select{}: with no other goroutine the runtime would
		// end the process as deadlocked instead of hanging
		time.Sleep(time.Hour)
	case "fail":
		fmt.Fprintln(os.Stderr, "hook-gpus: read request: unexpected end of JSON input")
		os.Exit(1)
	case "garbage":
		fmt.Println("not json")
	case "long":
		fmt.Println(strings.Repeat("x", agentproto.MaxMessage+10))
	}
	os.Exit(0)
}

// The hooks link no NVML: without an agent they run hook-gpus and
// take its answer, within the hook's bound, whatever the helper does.
func TestAskHelper(t *testing.T) {
	req := agentproto.Direct{GPU: config.GPU{Backend: "simulated", Simulated: config.Simulated{Count: 4, Model: "h100", Minors: []int{2, 3, 0, 1}}},
		Node: "gpu01", Timeout: config.Duration{Duration: time.Second}, Minors: []int{0, 2}}
	for _, tt := range []struct {
		mode, path string
		want       string // "" means an answer with both GPUs
	}{
		{mode: "serve"},
		{mode: "hang", want: "timed out"},
		{mode: "fail", want: "exit status 1: hook-gpus: read request"},
		{mode: "garbage", want: "bad answer"},
		{mode: "long", want: "answer longer than"},
		{mode: "serve", path: filepath.Join(t.TempDir(), agentproto.HelperName), want: "no such file or directory"},
	} {
		t.Run(tt.mode+tt.path, func(t *testing.T) {
			t.Setenv(helperEnv, tt.mode)
			path := tt.path
			if path == "" {
				path = os.Args[0]
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			start := time.Now()
			resp, err := askHelper(ctx, path, req)
			if el := time.Since(start); el > 2*time.Second+time.Second {
				t.Errorf("took %s, over the 2 s bound and the kill's grace", el)
			}
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.GPUs) != 2 || resp.GPUs[0].Minor != 0 || resp.GPUs[0].UUID == "" || resp.GPUs[1].UUID == "" ||
				resp.GPUs[0].UUID == resp.GPUs[1].UUID || resp.GPUs[0].EnergyMJ == nil {
				t.Errorf("answer %+v, want minors 0 and 2 with their UUIDs and energy", resp.GPUs)
			}
		})
	}
}
