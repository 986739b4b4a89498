package boundcmd

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestOutput(t *testing.T) {
	for _, tt := range []struct {
		name, script string
		wantOut      string
		wantLine     string
		wantErr      error  // nil: none, unless wantErrText
		wantErrText  string // in the error
	}{
		{name: "answer", script: "echo hello", wantOut: "hello\n"},
		{name: "too much", script: "head -c 5000 /dev/zero", wantErr: ErrTooLarge},
		{name: "failure with its complaint", script: "echo 'first line' >&2; echo second >&2; exit 3", wantLine: "first line", wantErrText: "exit status 3"},
		{name: "killed at the deadline", script: "exec sleep 30", wantErr: context.DeadlineExceeded},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			cmd := exec.CommandContext(ctx, "sh", "-c", tt.script)
			out, line, err := Output(ctx, cmd, 1000)
			switch {
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			case tt.wantErrText != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErrText)):
				t.Fatalf("err = %v, want %q", err, tt.wantErrText)
			case tt.wantErr == nil && tt.wantErrText == "" && err != nil:
				t.Fatal(err)
			}
			if string(out) != tt.wantOut || line != tt.wantLine {
				t.Errorf("out %q, stderr line %q; want %q, %q", out, line, tt.wantOut, tt.wantLine)
			}
		})
	}
}
