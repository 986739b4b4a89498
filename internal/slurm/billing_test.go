package slurm

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseWeights(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Weights
		wantErr bool
	}{
		{"", Weights{}, false},
		{"(null)", Weights{}, false},
		{"CPU=1.0,Mem=0.25G,GRES/gpu:a100=4.0,GRES/gpu:t4=0.5", Weights{"cpu": 1, "mem": 0.25 / 1024, "gres/gpu:a100": 4, "gres/gpu:t4": 0.5}, false},
		{"mem=.25", Weights{"mem": 0.25}, false},
		{"Mem=1T", Weights{"mem": 1.0 / (1024 * 1024)}, false},
		{"Mem=2K", Weights{"mem": 2048}, false},
		{"CPU", nil, true},
		{"CPU=-1", nil, true},
		{"CPU=abc", nil, true},
		{"=2", nil, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseWeights(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseWeights(%q) error %v, want error %v", tc.in, err, tc.wantErr)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("ParseWeights(%q) (-want +got):\n%s", tc.in, d)
			}
		})
	}
}

// TestBilling: docs/budgets.md's worked example, and sacct's own
// AllocTRES lines of the test cluster.
func TestBilling(t *testing.T) {
	w, err := ParseWeights("CPU=1.0,Mem=0.25G,GRES/gpu:a100=4.0,GRES/gpu:t4=0.5")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		tres    string
		maxTRES bool
		want    float64
	}{
		{"job 1", "cpu=8,mem=64G,node=1,gres/gpu=2,gres/gpu:a100=2", false, 32},
		{"job 2", "cpu=4,mem=16384M,node=1,gres/gpu=2,gres/gpu:t4=2", false, 9},
		{"job 1 MAX_TRES", "cpu=8,mem=64G,node=1,gres/gpu=2,gres/gpu:a100=2", true, 16},
		{"sacct's billing ignored", "billing=999,cpu=1,mem=1G", false, 1.25},
		{"nothing weighted", "node=1,energy=5", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tres, err := ParseTRES(tc.tres)
			if err != nil {
				t.Fatal(err)
			}
			if got := Billing(w, tc.maxTRES, tres); got != tc.want {
				t.Errorf("Billing(%s) = %v, want %v", tc.tres, got, tc.want)
			}
		})
	}
	if _, err := ParseTRES("cpu=2,mem"); err == nil {
		t.Error("ParseTRES of a TRES without a count: no error")
	}
}

func TestGPUType(t *testing.T) {
	w := Weights{"gres/gpu:a100": 4, "gres/gpu:t4": 0.5, "gres/gpu": 1}
	for model, want := range map[string]string{
		"NVIDIA A100-SXM4-80GB": "a100",
		"Tesla T4":              "t4",
		"NVIDIA H100 80GB HBM3": "",
		"":                      "",
	} {
		if got := w.GPUType(model); got != want {
			t.Errorf("GPUType(%q) = %q, want %q", model, got, want)
		}
	}
}

func TestParsePartitions(t *testing.T) {
	out, err := os.ReadFile("testdata/scontrol-partitions.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParsePartitions(string(out))
	if err != nil {
		t.Fatal(err)
	}
	want := []Partition{{Name: "gpu", Weights: "CPU=1.0,Mem=0.25G,GRES/gpu:a100=4.0,GRES/gpu:t4=0.5"}, {Name: "debug"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("partitions (-want +got):\n%s", d)
	}
	for _, bad := range []string{"Nodes=n1 State=UP", "PartitionName=x TRESBillingWeights=CPU=oops"} {
		if _, err := ParsePartitions(bad); err == nil {
			t.Errorf("ParsePartitions(%q): no error", bad)
		}
	}
}

func TestMaxTRES(t *testing.T) {
	for in, want := range map[string]bool{
		"PriorityFlags           = MAX_TRES\n":                                                   true,
		"PriorityType = priority/multifactor\nPriorityFlags = SMALL_RELATIVE_TO_TIME,MAX_TRES\n": true,
		"PriorityFlags           = \n":                                                           false,
		"SchedulerParameters = MAX_TRES\n":                                                       false,
	} {
		if got := MaxTRES(in); got != want {
			t.Errorf("MaxTRES(%q) = %v, want %v", in, got, want)
		}
	}
}
