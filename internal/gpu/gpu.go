// Package gpu reaches GPUs through nvml.Interface only, with every call
// bounded in time, and maps Slurm's device minors to GPU identities.
//
// Files: gpu.go (opening NVML or a registered backend, bounded calls,
// errors), sample.go (devices, identities by minor, one reading of every
// fixed field), metrics.go (the chosen metrics: clocks, field values,
// GPM), events.go (the Xid and ECC event set).
package gpu

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/record"
)

// ErrTimeout is returned when an NVML call did not answer in time.
var ErrTimeout = errors.New("nvml call timed out")

// Error is an NVML return code other than SUCCESS.
type Error struct {
	Op  string
	Ret nvml.Return
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Op, RetName(e.Ret)) }

// RetName names an NVML return code without calling into the library
// (nvml.ErrorString needs a loaded libnvidia-ml).
func RetName(r nvml.Return) string {
	switch r {
	case nvml.SUCCESS:
		return "SUCCESS"
	case nvml.ERROR_UNINITIALIZED:
		return "ERROR_UNINITIALIZED"
	case nvml.ERROR_INVALID_ARGUMENT:
		return "ERROR_INVALID_ARGUMENT"
	case nvml.ERROR_NOT_SUPPORTED:
		return "ERROR_NOT_SUPPORTED"
	case nvml.ERROR_NO_PERMISSION:
		return "ERROR_NO_PERMISSION"
	case nvml.ERROR_NOT_FOUND:
		return "ERROR_NOT_FOUND"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return "ERROR_DRIVER_NOT_LOADED"
	case nvml.ERROR_TIMEOUT:
		return "ERROR_TIMEOUT"
	case nvml.ERROR_GPU_IS_LOST:
		return "ERROR_GPU_IS_LOST"
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return "ERROR_LIBRARY_NOT_FOUND"
	case nvml.ERROR_FUNCTION_NOT_FOUND:
		return "ERROR_FUNCTION_NOT_FOUND"
	case nvml.ERROR_UNKNOWN:
		return "ERROR_UNKNOWN"
	default:
		return fmt.Sprintf("NVML_ERROR_%d", int(r))
	}
}

// Call runs f with a time bound. A call that does not return in time is
// abandoned (its goroutine finishes whenever the driver answers) and
// ErrTimeout is returned: a hook must never hang on a wedged GPU.
func Call[T any](ctx context.Context, timeout time.Duration, op string, f func() (T, nvml.Return)) (T, error) {
	type result struct {
		v T
		r nvml.Return
	}
	ch := make(chan result, 1)
	go func() {
		v, r := f()
		ch <- result{v, r}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	var zero T
	select {
	case res := <-ch:
		if res.r != nvml.SUCCESS {
			return zero, &Error{Op: op, Ret: res.r}
		}
		return res.v, nil
	case <-t.C:
		return zero, fmt.Errorf("%s: %w after %s", op, ErrTimeout, timeout)
	case <-ctx.Done():
		return zero, fmt.Errorf("%s: %w", op, ctx.Err())
	}
}

// Library is an initialised NVML with the time bound for its calls.
type Library struct {
	nvml.Interface
	Timeout time.Duration
}

// Open initialises the backend that cfg selects: the driver's NVML, or one
// a build registered (RegisterBackend). node names the node to a simulated
// backend (it seeds the UUIDs).
func Open(ctx context.Context, cfg config.GPU, node string, timeout time.Duration) (*Library, error) {
	var lib nvml.Interface
	switch cfg.Backend {
	case "", "nvml":
		lib = nvml.New()
	default:
		open, ok := backends[cfg.Backend]
		if !ok {
			return nil, fmt.Errorf("gpu backend %q is not built into this program: set gpu.backend = \"nvml\", or use a build made with -tags simulated", cfg.Backend)
		}
		l, err := open(cfg, node)
		if err != nil {
			return nil, err
		}
		lib = l
	}
	return OpenInterface(ctx, lib, timeout)
}

// Backend opens a GPU backend other than the driver's NVML for node.
type Backend func(cfg config.GPU, node string) (nvml.Interface, error)

// backends are the backends registered at init; read-only afterwards.
var backends = map[string]Backend{}

// RegisterBackend makes name a gpu.backend. The simulator registers itself
// this way (internal/sim/simulated), so that only the builds that import
// it (tests, the demo, -tags simulated) link it. Call it from an init.
func RegisterBackend(name string, open Backend) { backends[name] = open }

// OpenInterface initialises lib within timeout.
func OpenInterface(ctx context.Context, lib nvml.Interface, timeout time.Duration) (*Library, error) {
	if _, err := Call(ctx, timeout, "nvmlInit", func() (struct{}, nvml.Return) {
		return struct{}{}, initSafely(lib)
	}); err != nil {
		return nil, err
	}
	return &Library{Interface: lib, Timeout: timeout}, nil
}

// initSafely turns the panic go-nvml raises when libnvidia-ml.so cannot be
// loaded into ERROR_LIBRARY_NOT_FOUND.
func initSafely(lib nvml.Interface) (r nvml.Return) {
	defer func() {
		if recover() != nil {
			r = nvml.ERROR_LIBRARY_NOT_FOUND
		}
	}()
	return lib.Init()
}

// Close shuts NVML down without waiting on a wedged driver.
func (l *Library) Close() {
	_, _ = Call(context.Background(), l.Timeout, "nvmlShutdown", func() (struct{}, nvml.Return) {
		return struct{}{}, l.Shutdown()
	})
}

// Identity is one GPU as the hooks record it: the record's own type, so
// that the schema is defined in one place (internal/record).
type Identity = record.GPU

// Identify maps each device minor to its GPU and reads the energy counter.
// It always returns one Identity per minor; what it could not read is noted
// in Missing. The error is non-nil only when the device list itself could
// not be read.
func (l *Library) Identify(ctx context.Context, minors []int) ([]Identity, error) {
	out := make([]Identity, len(minors))
	for i, m := range minors {
		out[i].Minor = m
	}
	if len(minors) == 0 {
		return out, nil
	}
	byMinor, err := l.devicesByMinor(ctx)
	if err != nil {
		for i := range out {
			out[i].Missing = append(out[i].Missing, "identity: "+err.Error())
		}
		return out, err
	}
	for i := range out {
		d, ok := byMinor[out[i].Minor]
		if !ok {
			out[i].Missing = append(out[i].Missing, fmt.Sprintf("identity: no GPU with minor number %d", out[i].Minor))
			continue
		}
		idx := d.index
		out[i].Index = &idx
		l.fill(ctx, d.dev, &out[i])
	}
	return out, nil
}

// Energy reads the energy counters of already identified GPUs by UUID.
func (l *Library) Energy(ctx context.Context, ids []Identity) {
	for i := range ids {
		if ids[i].UUID == "" {
			continue
		}
		d, err := Call(ctx, l.Timeout, "nvmlDeviceGetHandleByUUID", func() (nvml.Device, nvml.Return) {
			return l.DeviceGetHandleByUUID(ids[i].UUID)
		})
		if err != nil {
			ids[i].Missing = append(ids[i].Missing, "energy: "+err.Error())
			continue
		}
		l.readEnergy(ctx, d, &ids[i])
	}
}

type indexed struct {
	dev   nvml.Device
	index int
}

func (l *Library) devicesByMinor(ctx context.Context) (map[int]indexed, error) {
	n, err := Call(ctx, l.Timeout, "nvmlDeviceGetCount", l.DeviceGetCount)
	if err != nil {
		return nil, err
	}
	m := make(map[int]indexed, n)
	for i := 0; i < n; i++ {
		d, err := Call(ctx, l.Timeout, "nvmlDeviceGetHandleByIndex", func() (nvml.Device, nvml.Return) {
			return l.DeviceGetHandleByIndex(i)
		})
		if err != nil {
			if errors.Is(err, ErrTimeout) || ctx.Err() != nil {
				return nil, err
			}
			continue // one lost GPU must not hide the others
		}
		minor, err := Call(ctx, l.Timeout, "nvmlDeviceGetMinorNumber", d.GetMinorNumber)
		if err != nil {
			if errors.Is(err, ErrTimeout) || ctx.Err() != nil {
				return nil, err
			}
			continue
		}
		m[minor] = indexed{dev: d, index: i}
	}
	return m, nil
}

func (l *Library) fill(ctx context.Context, d nvml.Device, id *Identity) {
	if uuid, err := Call(ctx, l.Timeout, "nvmlDeviceGetUUID", d.GetUUID); err != nil {
		id.Missing = append(id.Missing, "uuid: "+err.Error())
	} else {
		id.UUID = uuid
	}
	if name, err := Call(ctx, l.Timeout, "nvmlDeviceGetName", d.GetName); err != nil {
		id.Missing = append(id.Missing, "model: "+err.Error())
	} else {
		id.Model = name
	}
	l.readEnergy(ctx, d, id)
}

func (l *Library) readEnergy(ctx context.Context, d nvml.Device, id *Identity) {
	e, err := Call(ctx, l.Timeout, "nvmlDeviceGetTotalEnergyConsumption", d.GetTotalEnergyConsumption)
	if err != nil {
		id.Missing = append(id.Missing, "energy: "+err.Error())
		return
	}
	id.EnergyMJ = &e
}

// Processes lists the compute processes on the GPU with the given UUID.
func (l *Library) Processes(ctx context.Context, uuid string) ([]nvml.ProcessInfo, error) {
	d, err := Call(ctx, l.Timeout, "nvmlDeviceGetHandleByUUID", func() (nvml.Device, nvml.Return) {
		return l.DeviceGetHandleByUUID(uuid)
	})
	if err != nil {
		return nil, err
	}
	return Call(ctx, l.Timeout, "nvmlDeviceGetComputeRunningProcesses", d.GetComputeRunningProcesses)
}
