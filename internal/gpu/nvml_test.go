//go:build nvml

// Real-GPU test: needs the NVIDIA driver (libnvidia-ml.so.1) and
// nvidia-smi. Run on a GPU server:
//
//	CGO_CFLAGS='-O2 -g -Wno-deprecated-declarations' go test -tags nvml -run NVML -v -count=1 ./internal/gpu/ ./internal/agent/
package gpu_test

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/aicloud/gpusuite/internal/gpu"
)

// smiRow is one GPU as nvidia-smi reports it.
type smiRow map[string]string

var smiFields = []string{
	"index", "uuid", "name", "pci.bus_id", "memory.total", "memory.used", "utilization.gpu",
	"power.draw", "temperature.gpu", "clocks.sm", "ecc.errors.uncorrected.aggregate.total",
}

func querySMI(t *testing.T) []smiRow {
	t.Helper()
	out, err := exec.Command("nvidia-smi", "--query-gpu="+strings.Join(smiFields, ","), "--format=csv,noheader,nounits").Output()
	if err != nil {
		t.Fatalf("nvidia-smi: %v", err)
	}
	var rows []smiRow
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.Split(line, ",")
		if len(parts) != len(smiFields) {
			t.Fatalf("nvidia-smi line %q: %d fields, want %d", line, len(parts), len(smiFields))
		}
		r := smiRow{}
		for i, f := range smiFields {
			r[f] = strings.TrimSpace(parts[i])
		}
		rows = append(rows, r)
	}
	return rows
}

// num parses an nvidia-smi number; ok is false for "[N/A]", "[Not Supported]".
func num(s string) (float64, bool) {
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil
}

func openReal(t *testing.T) (*gpu.Library, []*gpu.Device) {
	t.Helper()
	lib, err := gpu.OpenInterface(context.Background(), nvml.New(), 60*time.Second)
	if err != nil {
		t.Fatalf("open NVML: %v", err)
	}
	t.Cleanup(lib.Close)
	lib.Timeout = 5 * time.Second
	devs, problems, err := lib.Devices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("GPU left out: %v", p)
	}
	return lib, devs
}

// What the agent reads agrees with nvidia-smi on the same GPUs.
func TestNVMLMatchesNvidiaSmi(t *testing.T) {
	lib, devs := openReal(t)
	rows := querySMI(t)
	readings := lib.SampleAll(context.Background(), devs)
	if len(devs) != len(rows) {
		t.Fatalf("agent sees %d GPUs, nvidia-smi %d", len(devs), len(rows))
	}
	xw, err := lib.WatchEvents(context.Background(), devs)
	if err != nil {
		t.Logf("GPU events: %v", err)
	}
	if xw != nil {
		ctx, cancel := context.WithCancel(context.Background())
		go xw.Run(ctx, func(gpu.Event) {})
		defer xw.Stop(2 * gpu.EventWait)
		defer cancel()
	}
	xw.FillXID(readings, devs)
	for i, r := range readings {
		row := rows[i]
		t.Logf("GPU %d %s %s: util=%s mem=%s power=%s temp=%s sm=%s throttle=%s ecc=%s xid=%s procs=%d missing=%v",
			r.Index, r.UUID, r.Model, p32(r.GPUUtil), p64(r.MemUsedMiB), p32(r.PowerMW), p32(r.TempC), p32(r.SMClockMHz),
			p64(r.Throttle), p64(r.ECCErrors), p64(r.XIDErrors), len(r.Procs), r.Missing)
		t.Logf("nvidia-smi    : %v", row)
		if r.UUID != row["uuid"] {
			t.Errorf("GPU %d: uuid %s, nvidia-smi %s", i, r.UUID, row["uuid"])
		}
		if r.Model != row["name"] {
			t.Errorf("GPU %d: name %q, nvidia-smi %q", i, r.Model, row["name"])
		}
		// device minor, as gres.conf and the hooks use it
		bus := strings.ToLower(row["pci.bus_id"])
		if len(bus) > 12 {
			bus = bus[len(bus)-12:] // 00000000:17:00.0 -> 0000:17:00.0
		}
		if info, err := os.ReadFile(filepath.Join("/proc/driver/nvidia/gpus", bus, "information")); err == nil {
			for _, l := range strings.Split(string(info), "\n") {
				if v, ok := strings.CutPrefix(l, "Device Minor:"); ok {
					if m, _ := strconv.Atoi(strings.TrimSpace(v)); m != devs[i].Minor {
						t.Errorf("GPU %d: minor %d, the driver says %d", i, devs[i].Minor, m)
					}
				}
			}
		} else {
			t.Logf("GPU %d: no /proc/driver/nvidia entry for %s: %v", i, bus, err)
		}
		check := func(name string, got *float64, field string, tol func(want float64) float64) {
			want, ok := num(row[field])
			switch {
			case !ok && got == nil:
			case !ok:
				t.Logf("GPU %d %s: agent %v, nvidia-smi %q", i, name, *got, row[field])
			case got == nil:
				t.Errorf("GPU %d %s: agent has none (missing %v), nvidia-smi %v", i, name, r.Missing, want)
			case math.Abs(*got-want) > tol(want):
				t.Errorf("GPU %d %s: agent %v, nvidia-smi %v", i, name, *got, want)
			}
		}
		check("memory.total MiB", f64(r.MemTotalMiB), "memory.total", func(float64) float64 { return 1 })
		check("memory.used MiB", f64(r.MemUsedMiB), "memory.used", func(w float64) float64 { return 512 + w*0.05 })
		check("utilization %", f32(r.GPUUtil), "utilization.gpu", func(float64) float64 { return 40 })
		check("power W", scale(f32(r.PowerMW), 1e-3), "power.draw", func(w float64) float64 { return 25 + w*0.25 })
		check("temperature C", f32(r.TempC), "temperature.gpu", func(float64) float64 { return 5 })
		check("SM clock MHz", f32(r.SMClockMHz), "clocks.sm", func(w float64) float64 { return 100 + w*0.25 })
		check("ECC uncorrected", f64(r.ECCErrors), "ecc.errors.uncorrected.aggregate.total", func(float64) float64 { return 0 })
		if r.EnergyMJ == nil {
			t.Errorf("GPU %d: no energy counter (%v); Volta or newer has one", i, r.Missing)
		}
		if !r.ProcsOK {
			t.Errorf("GPU %d: process list unreadable: %v", i, r.Missing)
		}
	}
	// the energy counter moves forward
	time.Sleep(2 * time.Second)
	again := lib.SampleAll(context.Background(), devs)
	for i := range again {
		if readings[i].EnergyMJ != nil && again[i].EnergyMJ != nil && *again[i].EnergyMJ <= *readings[i].EnergyMJ {
			t.Errorf("GPU %d: energy counter did not advance in 2 s (%d → %d mJ)", i, *readings[i].EnergyMJ, *again[i].EnergyMJ)
		}
	}
}

// A real sample cycle of every GPU: wall and CPU time.
func TestNVMLSampleCycleTime(t *testing.T) {
	lib, devs := openReal(t)
	const n = 50
	lib.SampleAll(context.Background(), devs) // warm
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	var worst time.Duration
	start := time.Now()
	for i := 0; i < n; i++ {
		s := time.Now()
		lib.SampleAll(context.Background(), devs)
		if d := time.Since(s); d > worst {
			worst = d
		}
	}
	wall := time.Since(start) / n
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration((ru1.Utime.Nano()+ru1.Stime.Nano())-(ru0.Utime.Nano()+ru0.Stime.Nano())) / n
	t.Logf("sample cycle of %d real GPUs: %s wall (max %s), %s CPU per cycle", len(devs), wall, worst, cpu)
	if worst > lib.Timeout {
		t.Errorf("a cycle took %s, over the per-cycle bound %s", worst, lib.Timeout)
	}
}

func f32(p *uint32) *float64 {
	if p == nil {
		return nil
	}
	v := float64(*p)
	return &v
}

func f64(p *uint64) *float64 {
	if p == nil {
		return nil
	}
	v := float64(*p)
	return &v
}

func scale(p *float64, k float64) *float64 {
	if p == nil {
		return nil
	}
	v := *p * k
	return &v
}

func p32(p *uint32) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatUint(uint64(*p), 10)
}

func p64(p *uint64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatUint(*p, 10)
}

// What each NVML call of a sample costs on this driver, wall and CPU.
func TestNVMLCallCost(t *testing.T) {
	_, devs := openReal(t)
	h := devs[0].Handle()
	calls := []struct {
		name string
		f    func() nvml.Return
	}{
		{"GetUtilizationRates", func() nvml.Return { _, r := h.GetUtilizationRates(); return r }},
		{"GetMemoryInfo_v2", func() nvml.Return { _, r := h.GetMemoryInfo_v2(); return r }},
		{"GetPowerUsage", func() nvml.Return { _, r := h.GetPowerUsage(); return r }},
		{"GetTotalEnergyConsumption", func() nvml.Return { _, r := h.GetTotalEnergyConsumption(); return r }},
		{"GetTemperature", func() nvml.Return { _, r := h.GetTemperature(nvml.TEMPERATURE_GPU); return r }},
		{"GetClockInfo(SM)", func() nvml.Return { _, r := h.GetClockInfo(nvml.CLOCK_SM); return r }},
		{"GetCurrentClocksEventReasons", func() nvml.Return { _, r := h.GetCurrentClocksEventReasons(); return r }},
		{"GetTotalEccErrors", func() nvml.Return {
			_, r := h.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.AGGREGATE_ECC)
			return r
		}},
		{"GetComputeRunningProcesses", func() nvml.Return { _, r := h.GetComputeRunningProcesses(); return r }},
	}
	const n = 50
	for _, c := range calls {
		var ru0, ru1 syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
		start := time.Now()
		var ret nvml.Return
		for i := 0; i < n; i++ {
			ret = c.f()
		}
		wall := time.Since(start) / n
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		cpu := time.Duration((ru1.Utime.Nano()+ru1.Stime.Nano())-(ru0.Utime.Nano()+ru0.Stime.Nano())) / n
		t.Logf("%-30s %10s wall %10s CPU  (%s)", c.name, wall, cpu, gpu.RetName(ret))
	}
}
