package ingest

import (
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
)

// TestSegmentFallsBackToEncodingJSON checks that a line the fast decoder
// refuses is still judged by encoding/json, both ways.
func TestSegmentFallsBackToEncodingJSON(t *testing.T) {
	head := `{"schema":"gpusuite.samples/v1","key":"c1/gpu001/1","cluster":"c1","node":"gpu001","seq":1,"interval_s":10,"start":"2026-03-02T10:00:00Z"}`
	name := record.SegmentFileName("c1", "gpu001", 1)
	v := Validator{Now: time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC), MaxFuture: time.Hour}
	tests := []struct {
		name    string
		line    string
		wantErr string // "" = accepted
		want    uint32 // gpu_util when accepted
	}{
		{"plain", `{"t":"2026-03-02T10:00:00Z","uuid":"GPU-12345678","index":0,"gpu_util":5}`, "", 5},
		{"other case key, accepted by encoding/json", `{"T":"2026-03-02T10:00:00Z","UUID":"GPU-12345678","index":0,"GPU_UTIL":6}`, "", 6},
		{"escape, accepted by encoding/json", `{"t":"2026-03-02T10:00:00Z","uuid":"GPU-1234\u00355678","index":0,"gpu_util":7}`, "", 7},
		{"unknown field", `{"t":"2026-03-02T10:00:00Z","uuid":"GPU-12345678","index":0,"gpu_util":5,"x":1}`, `unknown field "x"`, 0},
		{"util over 100", `{"t":"2026-03-02T10:00:00Z","uuid":"GPU-12345678","index":0,"gpu_util":101}`, "utilization above 100%", 0},
		{"bad uuid", `{"t":"2026-03-02T10:00:00Z","uuid":"GPU-1","index":0}`, "malformed", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := v.Parse("gpu001", name, []byte(head+"\n"+tt.line+"\n"))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Samples) != 1 || p.Samples[0].GPUUtil == nil || *p.Samples[0].GPUUtil != tt.want {
				t.Fatalf("samples %+v, want one with gpu_util %d", p.Samples, tt.want)
			}
		})
	}
}
