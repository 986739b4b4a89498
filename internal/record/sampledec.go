package record

import (
	"bytes"
	"strconv"
)

// SampleDecoder decodes segment lines into Sample without
// reflection. It takes only the plain shape the agent writes (exact field
// names, each once; ASCII strings without escapes; no nulls) and says no
// to anything else, which the caller then gives to encoding/json: what is
// accepted, and every error, stays encoding/json's. Whatever it does
// accept decodes to exactly what encoding/json would give
// (TestSampleDecoderAgreesWithEncodingJSON, FuzzSampleDecoder).
type SampleDecoder struct {
	b []byte
	i int
	// uuids interns the GPU UUIDs of a segment (a handful, repeated on
	// every line).
	uuids []string
	// vals and jobSlab are slabs that a segment's samples take their values
	// and job lists from: one allocation per slabLen samples, not one or
	// two per sample, and no allocator rounding (TestLoadMemory).
	vals    []sampleValues
	jobSlab []JobShare
	// scratch collects one sample's jobs before they go to the slab.
	scratch []JobShare
}

const slabLen = 512

// valsSlabLen makes a values slab whole pages (1024 × 72 bytes = 9 × 8 KiB):
// a large allocation is rounded up to pages, and 512 would waste 4 KiB a
// slab (TestLoadMemory).
const valsSlabLen = 1024

// newValues cuts a zeroed sampleValues from the slab.
func (d *SampleDecoder) newValues() *sampleValues {
	if len(d.vals) == cap(d.vals) {
		d.vals = make([]sampleValues, 0, valsSlabLen)
	}
	d.vals = d.vals[:len(d.vals)+1]
	return &d.vals[len(d.vals)-1]
}

// keepJobs copies the scratch jobs into the slab, capped so that an
// append to one sample's jobs cannot reach the next one's.
func (d *SampleDecoder) keepJobs() []JobShare {
	n := len(d.scratch)
	if n == 0 {
		return []JobShare{}
	}
	if cap(d.jobSlab)-len(d.jobSlab) < n {
		d.jobSlab = make([]JobShare, 0, max(slabLen, n))
	}
	start := len(d.jobSlab)
	d.jobSlab = append(d.jobSlab, d.scratch...)
	return d.jobSlab[start:len(d.jobSlab):len(d.jobSlab)]
}

// sampleValues backs a sample's optional numbers: one allocation instead
// of one per field.
type sampleValues struct {
	gpuUtil, memUtil, power, temp, smClock uint32
	memUsed, memTotal, energy, throttle    uint64
	ecc, xid                               uint64
}

// decode fills s from line and reports whether it could; on false s is
// to be thrown away.
func (d *SampleDecoder) Decode(line []byte, s *Sample) bool {
	d.b, d.i = line, 0
	*s = Sample{}
	var vals *sampleValues
	v := func() *sampleValues {
		if vals == nil {
			vals = d.newValues()
		}
		return vals
	}
	if !d.open('{') {
		return false
	}
	var seen uint32
	ok := d.fields(func(key []byte) bool {
		bit, ok := sampleField(key)
		if !ok || seen&bit != 0 {
			return false // unknown, differently cased or repeated
		}
		seen |= bit
		switch bit {
		case fT:
			start := d.i
			if _, ok := d.str(); !ok {
				return false
			}
			if s.Time.UnmarshalJSON(d.b[start:d.i]) != nil {
				return false
			}
		case fUUID:
			b, ok := d.str()
			if !ok {
				return false
			}
			s.UUID = d.intern(b)
		case fIndex:
			n, ok := d.int()
			if !ok {
				return false
			}
			s.Index = n
		case fParent:
			b, ok := d.str()
			if !ok {
				return false
			}
			mig(s).Parent = d.intern(b)
		case fParentShare:
			if !d.float(&mig(s).ParentShare) {
				return false
			}
		case fJobs:
			if !d.jobs(s) {
				return false
			}
		case fMetrics:
			if !d.metrics(s) {
				return false
			}
		case fProcs:
			if !d.procs(s) {
				return false
			}
		case fMissing:
			if !d.strings(&s.Missing) {
				return false
			}
		case fGPUUtil:
			x := v()
			if !d.u32(&x.gpuUtil) {
				return false
			}
			s.GPUUtil = &x.gpuUtil
		case fMemUtil:
			x := v()
			if !d.u32(&x.memUtil) {
				return false
			}
			s.MemUtil = &x.memUtil
		case fMemUsed:
			x := v()
			if !d.u64(&x.memUsed) {
				return false
			}
			s.MemUsedMiB = &x.memUsed
		case fMemTotal:
			x := v()
			if !d.u64(&x.memTotal) {
				return false
			}
			s.MemTotalMiB = &x.memTotal
		case fPower:
			x := v()
			if !d.u32(&x.power) {
				return false
			}
			s.PowerMW = &x.power
		case fEnergy:
			x := v()
			if !d.u64(&x.energy) {
				return false
			}
			s.EnergyMJ = &x.energy
		case fTemp:
			x := v()
			if !d.u32(&x.temp) {
				return false
			}
			s.TempC = &x.temp
		case fSMClock:
			x := v()
			if !d.u32(&x.smClock) {
				return false
			}
			s.SMClockMHz = &x.smClock
		case fThrottle:
			x := v()
			if !d.u64(&x.throttle) {
				return false
			}
			s.Throttle = &x.throttle
		case fECC:
			x := v()
			if !d.u64(&x.ecc) {
				return false
			}
			s.ECCErrors = &x.ecc
		case fXID:
			x := v()
			if !d.u64(&x.xid) {
				return false
			}
			s.XIDErrors = &x.xid
		}
		return true
	})
	if !ok {
		return false
	}
	d.ws()
	return d.i == len(d.b)
}

// mig is s's MIG part, made on its first field as encoding/json makes
// it: MIG instances only, so every other sample stays as small as it was.
func mig(s *Sample) *SampleMIG {
	if s.SampleMIG == nil {
		s.SampleMIG = &SampleMIG{}
	}
	return s.SampleMIG
}

// Sample fields, one bit each.
const (
	fT uint32 = 1 << iota
	fUUID
	fIndex
	fJobs
	fGPUUtil
	fMemUtil
	fMemUsed
	fMemTotal
	fPower
	fEnergy
	fTemp
	fSMClock
	fThrottle
	fECC
	fXID
	fProcs
	fMissing
	fMetrics
	fParent
	fParentShare
)

func sampleField(key []byte) (uint32, bool) {
	switch string(key) {
	case "t":
		return fT, true
	case "uuid":
		return fUUID, true
	case "index":
		return fIndex, true
	case "jobs":
		return fJobs, true
	case "gpu_util":
		return fGPUUtil, true
	case "mem_util":
		return fMemUtil, true
	case "mem_used_mib":
		return fMemUsed, true
	case "mem_total_mib":
		return fMemTotal, true
	case "power_mw":
		return fPower, true
	case "energy_mj":
		return fEnergy, true
	case "temp_c":
		return fTemp, true
	case "sm_clock_mhz":
		return fSMClock, true
	case "throttle":
		return fThrottle, true
	case "ecc_errors":
		return fECC, true
	case "xid_errors":
		return fXID, true
	case "procs":
		return fProcs, true
	case "missing":
		return fMissing, true
	case "metrics":
		return fMetrics, true
	case "parent":
		return fParent, true
	case "parent_share":
		return fParentShare, true
	}
	return 0, false
}

func (d *SampleDecoder) jobs(s *Sample) bool {
	if !d.open('[') {
		return false
	}
	d.scratch = d.scratch[:0]
	ok := d.elems(func() bool {
		var j JobShare
		ok := d.object(jobShareKeys, func(key int) bool {
			switch key {
			case 0:
				return d.u64(&j.Job)
			case 1:
				n, ok := d.int()
				j.Restart = n
				return ok
			case 2:
				return d.float(&j.Share)
			default:
				return d.bool(&j.Idle)
			}
		})
		d.scratch = append(d.scratch, j)
		return ok
	})
	if ok {
		s.Jobs = d.keepJobs()
	}
	return ok
}

// The members of a job share and of a process, in the order object
// numbers them.
var (
	jobShareKeys = []string{"job", "restart", "share", "idle"}
	procKeys     = []string{"pid", "mem_mib", "job", "foreign", "cgroup_error"}
)

// object reads an object whose members are among keys, each at most once
// (an unknown or repeated one says no, as for the sample itself), calling
// member with the index of each key to read its value.
func (d *SampleDecoder) object(keys []string, member func(key int) bool) bool {
	if !d.open('{') {
		return false
	}
	var seen uint32
	return d.fields(func(key []byte) bool {
		for i, k := range keys {
			if string(key) != k {
				continue
			}
			if seen&(1<<i) != 0 {
				return false
			}
			seen |= 1 << i
			return member(i)
		}
		return false
	})
}

// metrics reads the metrics object: names interned from the catalogue,
// values as encoding/json reads a float64; a repeated name says no (for
// encoding/json, whose last-one-wins is then what is taken).
func (d *SampleDecoder) metrics(s *Sample) bool {
	if !d.open('{') {
		return false
	}
	// size the map once: every member has one ':' before the '}'
	n := 0
	for _, c := range d.b[d.i:] {
		if c == '}' {
			break
		}
		if c == ':' {
			n++
		}
	}
	m := make(map[string]float64, n)
	s.Metrics = m
	return d.fields(func(key []byte) bool {
		name, ok := catalogueName(key)
		if !ok {
			if _, dup := m[string(key)]; dup {
				return false
			}
			name = string(key)
		} else if _, dup := m[name]; dup {
			return false
		}
		var v float64
		if !d.float(&v) {
			return false
		}
		m[name] = v
		return true
	})
}

func (d *SampleDecoder) procs(s *Sample) bool {
	if !d.open('[') {
		return false
	}
	s.Procs = []Proc{}
	return d.elems(func() bool {
		var p Proc
		ok := d.object(procKeys, func(key int) bool {
			switch key {
			case 0:
				return d.u32(&p.PID)
			case 1:
				return d.u64(&p.MemUsedMiB)
			case 2:
				return d.u64(&p.Job)
			case 3:
				return d.bool(&p.Foreign)
			default:
				b, ok := d.str()
				p.CgroupError = string(b)
				return ok
			}
		})
		s.Procs = append(s.Procs, p)
		return ok
	})
}

func (d *SampleDecoder) strings(dst *[]string) bool {
	if !d.open('[') {
		return false
	}
	*dst = []string{}
	return d.elems(func() bool {
		b, ok := d.str()
		*dst = append(*dst, string(b))
		return ok
	})
}

// elems reads array elements after '[' up to and including ']'.
func (d *SampleDecoder) elems(elem func() bool) bool { return d.list(']', elem) }

// fields reads object members after '{' up to and including '}'; value
// reads the value of key (and says no to an unknown one).
func (d *SampleDecoder) fields(value func(key []byte) bool) bool {
	return d.list('}', func() bool {
		key, ok := d.str()
		return ok && d.colon() && value(key)
	})
}

// list reads the comma-separated items of an array or object up to and
// including end; item reads one.
func (d *SampleDecoder) list(end byte, item func() bool) bool {
	d.ws()
	if d.peek() == end {
		d.i++
		return true
	}
	for {
		d.ws()
		if !item() {
			return false
		}
		d.ws()
		switch d.next() {
		case ',':
		case end:
			return true
		default:
			return false
		}
	}
}

// maxInterned bounds the UUIDs a decoder keeps: a node has at most a few
// dozen GPUs, and a hostile segment must not grow the list without end.
const maxInterned = 64

func (d *SampleDecoder) intern(b []byte) string {
	for _, u := range d.uuids {
		if u == string(b) {
			return u
		}
	}
	u := string(b)
	if len(d.uuids) < maxInterned {
		d.uuids = append(d.uuids, u)
	}
	return u
}

func (d *SampleDecoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *SampleDecoder) peek() byte {
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *SampleDecoder) next() byte {
	if d.i < len(d.b) {
		d.i++
		return d.b[d.i-1]
	}
	return 0
}

func (d *SampleDecoder) open(c byte) bool {
	d.ws()
	return d.next() == c
}

func (d *SampleDecoder) colon() bool {
	d.ws()
	if d.next() != ':' {
		return false
	}
	d.ws()
	return true
}

// str reads a string of printable ASCII without escapes and returns its
// content (not a copy).
func (d *SampleDecoder) str() ([]byte, bool) {
	if d.next() != '"' {
		return nil, false
	}
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return d.b[start : d.i-1], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
		d.i++
	}
	return nil, false
}

// number reads a JSON number token; digits says whether it is a plain
// run of digits (no sign, fraction or exponent).
func (d *SampleDecoder) number() (tok []byte, digits bool) {
	start := d.i
	digits = true
	if d.peek() == '-' {
		d.i++
		digits = false
	}
	switch c := d.peek(); {
	case c == '0':
		d.i++
	case c >= '1' && c <= '9':
		for c := d.peek(); c >= '0' && c <= '9'; c = d.peek() {
			d.i++
		}
	default:
		return nil, false
	}
	if d.peek() == '.' {
		d.i++
		digits = false
		if c := d.peek(); c < '0' || c > '9' {
			return nil, false
		}
		for c := d.peek(); c >= '0' && c <= '9'; c = d.peek() {
			d.i++
		}
	}
	if c := d.peek(); c == 'e' || c == 'E' {
		d.i++
		digits = false
		if c := d.peek(); c == '+' || c == '-' {
			d.i++
		}
		if c := d.peek(); c < '0' || c > '9' {
			return nil, false
		}
		for c := d.peek(); c >= '0' && c <= '9'; c = d.peek() {
			d.i++
		}
	}
	return d.b[start:d.i], true
}

func (d *SampleDecoder) u32(dst *uint32) bool { return unsigned(d, dst, 32) }

func (d *SampleDecoder) u64(dst *uint64) bool { return unsigned(d, dst, 64) }

// unsigned reads a whole number of at most bits bits into dst.
func unsigned[T uint32 | uint64](d *SampleDecoder, dst *T, bits int) bool {
	tok, digits := d.number()
	if !digits {
		return false
	}
	n, err := strconv.ParseUint(string(tok), 10, bits)
	*dst = T(n)
	return err == nil
}

func (d *SampleDecoder) int() (int, bool) {
	tok, ok := d.number()
	if !ok || bytes.ContainsAny(tok, ".eE") {
		return 0, false
	}
	n, err := strconv.ParseInt(string(tok), 10, 0)
	return int(n), err == nil
}

func (d *SampleDecoder) float(dst *float64) bool {
	tok, ok := d.number()
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	*dst = f
	return err == nil
}

func (d *SampleDecoder) bool(dst *bool) bool {
	rest := d.b[d.i:]
	switch {
	case bytes.HasPrefix(rest, []byte("true")):
		*dst = true
		d.i += 4
	case bytes.HasPrefix(rest, []byte("false")):
		*dst = false
		d.i += 5
	default:
		return false
	}
	return true
}
