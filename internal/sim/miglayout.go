package sim

import (
	"crypto/sha256"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/aicloud/gpusuite/internal/record"
)

// MIG layouts as sites cut their GPUs: an A100 80GB into seven 1g.10gb,
// an H100 80GB into a mix. Each profile is "<slices>g.<GiB>gb".
var (
	LayoutA100x7  = []string{"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"}
	LayoutH100Mix = []string{"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}
)

// EnableMIGLayout puts the GPU in MIG mode with one instance per profile,
// in order: GPU instance ids from 1 as the driver numbers them on a fresh
// layout, one compute instance (id 0) each, names "<model> MIG <profile>"
// as NVML gives them. It panics on a profile it cannot read or slices
// beyond seven: a layout is a test's fixture.
func (d *Device) EnableMIGLayout(profiles []string) []*MIGDevice {
	out := make([]*MIGDevice, 0, len(profiles))
	slices := 0
	for i, p := range profiles {
		prof, ok := layoutProfile(p)
		if !ok {
			panic(fmt.Sprintf("sim: MIG profile %q", p))
		}
		slices += prof.Slices
		out = append(out, &MIGDevice{
			parent: d, total: uint64(prof.GB) << 30, gi: i + 1, ci: 0, uuid: MIGUUID(d.UUID, i),
			name: fmt.Sprintf("%s MIG %s", d.Config.Name, p),
		})
	}
	if slices > 7 {
		panic(fmt.Sprintf("sim: MIG layout %v uses %d slices of 7", profiles, slices))
	}
	d.installMIG(out)
	// NVML finds a MIG instance by its UUID too; set before the server is
	// in use, as a layout is
	byUUID := d.srv.DeviceGetHandleByUUIDFunc
	d.srv.DeviceGetHandleByUUIDFunc = func(uuid string) (nvml.Device, nvml.Return) {
		for _, m := range out {
			if m.uuid == uuid {
				return m, m.parent.guard()
			}
		}
		return byUUID(uuid)
	}
	return out
}

// MIGUUID is the UUID of the parent's i-th MIG instance, stable like
// UUID's.
func MIGUUID(parent string, i int) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s/mig/%d", parent, i)))
	return fmt.Sprintf("MIG-%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// CheckLayout says why profiles are not a MIG layout EnableMIGLayout
// takes.
func CheckLayout(profiles []string) error {
	slices := 0
	for _, p := range profiles {
		prof, ok := layoutProfile(p)
		if !ok {
			return fmt.Errorf("MIG profile %q is not <slices>g.<GiB>gb", p)
		}
		slices += prof.Slices
	}
	if slices > 7 {
		return fmt.Errorf("MIG layout %v uses %d slices of 7", profiles, slices)
	}
	return nil
}

// layoutProfile reads a layout's profile: a GPU instance's, as
// record.ParseMIGProfile reads it.
func layoutProfile(p string) (record.MIGProfile, bool) {
	prof, ok := record.ParseMIGProfile(p)
	return prof, ok && prof.Compute == 0
}

// installMIG makes out the GPU's MIG instances, as EnableMIG does.
func (d *Device) installMIG(out []*MIGDevice) {
	d.Lock()
	d.MigMode = nvml.DEVICE_MIG_ENABLE
	d.Unlock()
	d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
	d.GetMigDeviceHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if r := d.guard(); r != nvml.SUCCESS {
			return nil, r
		}
		if i < 0 || i >= len(out) {
			return nil, nvml.ERROR_NOT_FOUND
		}
		return out[i], nvml.SUCCESS
	}
	// GPM of a GPU instance, read through its GPU as NVML does
	d.GpmMigSampleGetFunc = func(gi int, s nvml.GpmSample) nvml.Return {
		for _, m := range out {
			if m.gi == gi {
				return d.gpmTake(s, m)
			}
		}
		if r := d.guard(); r != nvml.SUCCESS {
			return r
		}
		return nvml.ERROR_NOT_FOUND
	}
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		if r := d.guard(); r != nvml.SUCCESS {
			return nvml.Utilization{}, r
		}
		return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED
	}
}

// GetGpuInstanceId implements nvml.Device.
func (m *MIGDevice) GetGpuInstanceId() (int, nvml.Return) { return m.gi, m.parent.guard() }

// GetComputeInstanceId implements nvml.Device.
func (m *MIGDevice) GetComputeInstanceId() (int, nvml.Return) { return m.ci, m.parent.guard() }

// GetDeviceHandleFromMigDeviceHandle implements nvml.Device: the parent.
func (m *MIGDevice) GetDeviceHandleFromMigDeviceHandle() (nvml.Device, nvml.Return) {
	return m.parent, m.parent.guard()
}

// IsMigDeviceHandle implements nvml.Device.
func (m *MIGDevice) IsMigDeviceHandle() (bool, nvml.Return) { return true, m.parent.guard() }
