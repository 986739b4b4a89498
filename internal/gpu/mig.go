package gpu

import (
	"context"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// MIGUUIDs fills the MIG UUID of each slice in ids: an Identity with a
// Parent UUID, a GPU instance and a compute instance (as the hooks map
// them from the nvidia-caps, without NVML) and no UUID yet. The parent's
// instances are walked by index and matched on their GPU and compute
// instance ids; what cannot be read is noted in Missing. Whole GPUs are
// left alone.
func (l *Library) MIGUUIDs(ctx context.Context, ids []Identity) {
	for i := range ids {
		id := &ids[i]
		if id.Parent == "" || id.GI == nil || id.CI == nil || id.UUID != "" {
			continue
		}
		uuid, err := l.migUUID(ctx, id.Parent, *id.GI, *id.CI)
		if err != nil {
			id.Missing = append(id.Missing, "uuid: "+err.Error())
			continue
		}
		id.UUID = uuid
	}
}

func (l *Library) migUUID(ctx context.Context, parent string, gi, ci int) (string, error) {
	p, err := Call(ctx, l.Timeout, "nvmlDeviceGetHandleByUUID", func() (nvml.Device, nvml.Return) {
		var d nvml.Device
		ret := safe(func() nvml.Return { var r nvml.Return; d, r = l.DeviceGetHandleByUUID(parent); return r })
		return d, ret
	})
	if err != nil {
		return "", err
	}
	n, err := Call(ctx, l.Timeout, "nvmlDeviceGetMaxMigDeviceCount", func() (int, nvml.Return) {
		var n int
		ret := safe(func() nvml.Return { var r nvml.Return; n, r = p.GetMaxMigDeviceCount(); return r })
		return n, ret
	})
	if err != nil {
		return "", err
	}
	for i := 0; i < n; i++ {
		h, err := Call(ctx, l.Timeout, "nvmlDeviceGetMigDeviceHandleByIndex", func() (nvml.Device, nvml.Return) {
			var d nvml.Device
			ret := safe(func() nvml.Return { var r nvml.Return; d, r = p.GetMigDeviceHandleByIndex(i); return r })
			return d, ret
		})
		if err != nil {
			if ctx.Err() != nil {
				return "", err
			}
			continue // an empty slot answers ERROR_NOT_FOUND
		}
		if g, c := l.migIDs(ctx, h); g != gi || c != ci {
			continue
		}
		return Call(ctx, l.Timeout, "nvmlDeviceGetUUID", h.GetUUID)
	}
	return "", fmt.Errorf("no MIG instance gi%d/ci%d on %s", gi, ci, parent)
}

// migIDs is a MIG device's GPU and compute instance ids, -1 for one NVML
// did not give.
func (l *Library) migIDs(ctx context.Context, h nvml.Device) (gi, ci int) {
	gi, err := Call(ctx, l.Timeout, "nvmlDeviceGetGpuInstanceId", func() (int, nvml.Return) {
		var v int
		ret := safe(func() nvml.Return { var r nvml.Return; v, r = h.GetGpuInstanceId(); return r })
		return v, ret
	})
	if err != nil {
		gi = -1
	}
	ci, err = Call(ctx, l.Timeout, "nvmlDeviceGetComputeInstanceId", func() (int, nvml.Return) {
		var v int
		ret := safe(func() nvml.Return { var r nvml.Return; v, r = h.GetComputeInstanceId(); return r })
		return v, ret
	})
	if err != nil {
		ci = -1
	}
	return gi, ci
}
