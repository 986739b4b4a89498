// Package slurm parses what slurmd hands to Prolog and Epilog programs
// (env.go, cgroup.go) and how Slurm bills a job's TRES (billing.go).
package slurm

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/aicloud/gpusuite/internal/record"
)

// Context is the script context slurmd reports in SLURM_SCRIPT_CONTEXT.
type Context string

// The contexts gpusuite's hooks run in.
const (
	PrologSlurmd Context = "prolog_slurmd"
	EpilogSlurmd Context = "epilog_slurmd"
)

// Job is one job as seen by a node-side hook: the record an event carries
// (fields slurmd did not set are zero), with Missing listing them and
// Problems the values that were set but could not be parsed, so a hook can
// record what it has and say what it lacks.
type Job struct {
	record.Job

	Missing  []string
	Problems []string
}

// Exit is how a job ended, from the epilog's environment; the record's own
// type, as the hooks write it.
type Exit = record.Exit

// ErrNoJobID means SLURM_JOB_ID is missing or garbage: nothing can be keyed.
var ErrNoJobID = errors.New("SLURM_JOB_ID is missing or not a job id")

// Names are 1 to 128 bytes: a letter, digit or '_', then those or the
// extra characters of their kind. Checked by hand, not by regexp: compiling
// one at init cost every prolog half a millisecond before main.
const (
	nameExtra = ".@+-" // users, accounts, partitions
	nodeExtra = ".-"   // nodes, clusters
)

func validName(s, extra string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_':
		case i > 0 && strings.IndexByte(extra, c) >= 0:
		default:
			return false
		}
	}
	return true
}

// ParseEnv reads a job from the hook environment. It returns ErrNoJobID when
// the job cannot be identified; every other defect is noted in Missing or
// Problems and parsing carries on.
func ParseEnv(getenv func(string) string) (Job, error) {
	var j Job
	p := parser{getenv: getenv, job: &j}

	id, ok := p.uint("SLURM_JOB_ID", true)
	if !ok || id == 0 {
		return j, ErrNoJobID
	}
	j.ID = id
	if v, ok := p.uint("SLURM_ARRAY_JOB_ID", false); ok {
		j.ArrayJobID = v
	}
	j.ArrayTaskID = p.int("SLURM_ARRAY_TASK_ID", false)
	if rc := p.int("SLURM_JOB_RESTART_COUNT", false); rc != nil {
		switch {
		case *rc < 0:
			p.problem("SLURM_JOB_RESTART_COUNT", strconv.FormatInt(*rc, 10), "negative")
		case *rc > record.MaxRestartCount:
			p.problem("SLURM_JOB_RESTART_COUNT", strconv.FormatInt(*rc, 10), fmt.Sprintf("above %d; recorded as 0", record.MaxRestartCount))
		default:
			j.RestartCount = int(*rc)
		}
	}
	j.User = p.name("SLURM_JOB_USER", nameExtra, true)
	j.UID = p.id("SLURM_JOB_UID", true)
	j.GID = p.id("SLURM_JOB_GID", false)
	j.Account = p.name("SLURM_JOB_ACCOUNT", nameExtra, false)
	j.Partition = p.name("SLURM_JOB_PARTITION", nameExtra, false)
	j.Node = p.name("SLURMD_NODENAME", nodeExtra, true)
	j.Cluster = p.name("SLURM_CLUSTER_NAME", nodeExtra, false)

	if raw := getenv("SLURM_JOB_GPUS"); raw != "" {
		gpus, err := ParseIDList(raw)
		if err != nil {
			p.problem("SLURM_JOB_GPUS", raw, err.Error())
		} else {
			j.GPUs = gpus
		}
	}
	j.CUDAVisibleDevices = getenv("CUDA_VISIBLE_DEVICES")
	if strings.ContainsAny(j.CUDAVisibleDevices, "\n\x00") || len(j.CUDAVisibleDevices) > 4096 {
		p.problem("CUDA_VISIBLE_DEVICES", j.CUDAVisibleDevices, "not a device list")
		j.CUDAVisibleDevices = ""
	}

	switch c := Context(getenv("SLURM_SCRIPT_CONTEXT")); c {
	case "":
	case PrologSlurmd, EpilogSlurmd, "prolog_slurmctld", "epilog_slurmctld":
		j.Context = string(c)
	default:
		p.problem("SLURM_SCRIPT_CONTEXT", string(c), "unknown context")
	}

	j.Exit = p.exit()
	return j, nil
}

// exit reads how the job ended. It is nil unless the code is known: an
// exit that slurmd did not give, or gave garbage, is absent, never 0.
func (p parser) exit() *Exit {
	e := &Exit{Raw: p.int("SLURM_JOB_EXIT_CODE", false), Derived: p.int("SLURM_JOB_DERIVED_EC", false)}
	if raw := p.getenv("SLURM_JOB_EXIT_CODE2"); raw != "" {
		code, sig, err := ParseExitCode2(raw)
		if err == nil {
			e.Code, e.Signal = code, sig
			return e
		}
		p.problem("SLURM_JOB_EXIT_CODE2", raw, err.Error())
	}
	if e.Raw == nil {
		return nil
	}
	if *e.Raw < 0 || *e.Raw > 0xffff {
		p.problem("SLURM_JOB_EXIT_CODE", strconv.FormatInt(*e.Raw, 10), "not a wait(2) status")
		return nil
	}
	// wait(2) status: high byte is the exit code, low 7 bits the signal.
	e.Code, e.Signal = int(*e.Raw>>8)&0xff, int(*e.Raw&0x7f)
	return e
}

type parser struct {
	getenv func(string) string
	job    *Job
}

func (p parser) missing(key string) { p.job.Missing = append(p.job.Missing, key) }

func (p parser) problem(key, val, why string) {
	if len(val) > 64 {
		val = val[:64] + "..."
	}
	p.job.Problems = append(p.job.Problems, fmt.Sprintf("%s=%q: %s", key, val, why))
}

func (p parser) uint(key string, required bool) (uint64, bool) {
	raw := p.getenv(key)
	if raw == "" {
		if required {
			p.missing(key)
		}
		return 0, false
	}
	v, err := strconv.ParseUint(raw, 10, 32)
	if err != nil {
		p.problem(key, raw, "not an unsigned 32-bit number")
		return 0, false
	}
	return v, true
}

func (p parser) int(key string, required bool) *int64 {
	raw := p.getenv(key)
	if raw == "" {
		if required {
			p.missing(key)
		}
		return nil
	}
	v, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || v > 1<<32 || v < -(1<<31) {
		p.problem(key, raw, "not a number")
		return nil
	}
	return &v
}

// id is a uid or gid: a number no job can have ((uid_t)-1, Slurm's
// NO_VAL) is flagged and recorded as absent.
func (p parser) id(key string, required bool) *int64 {
	v := p.int(key, required)
	if v != nil && (*v < 0 || *v > record.MaxID) {
		p.problem(key, strconv.FormatInt(*v, 10), fmt.Sprintf("not an id (0..%d); recorded as absent", int64(record.MaxID)))
		return nil
	}
	return v
}

func (p parser) name(key, extra string, required bool) string {
	raw := p.getenv(key)
	if raw == "" {
		if required {
			p.missing(key)
		}
		return ""
	}
	if !validName(raw, extra) {
		p.problem(key, raw, "not a valid name")
		return ""
	}
	return raw
}

// maxGPUID bounds ids in a list so a garbage range like 0-4000000000 cannot
// make a hook allocate gigabytes.
const maxGPUID = 1023

// ParseIDList parses Slurm's id lists: "0,1", "0-3,6", "" (none). The result
// is sorted and free of duplicates.
func ParseIDList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := parseID(lo)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = parseID(hi); err != nil {
				return nil, err
			}
			if b < a {
				return nil, fmt.Errorf("range %q runs backwards", part)
			}
		}
		for i := a; i <= b; i++ {
			seen[i] = true
		}
	}
	ids := make([]int, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids, nil
}

func parseID(s string) (int, error) {
	if s == "" {
		return 0, errors.New("empty element")
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a device number", s)
	}
	if v > maxGPUID {
		return 0, fmt.Errorf("%d is above the largest device number %d", v, maxGPUID)
	}
	return v, nil
}

// ParseExitCode2 parses SLURM_JOB_EXIT_CODE2, "CODE:SIGNAL".
func ParseExitCode2(s string) (code, signal int, err error) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, errors.New("want CODE:SIGNAL")
	}
	code, err1 := strconv.Atoi(a)
	signal, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || code < 0 || code > 255 || signal < 0 || signal > 128 {
		return 0, 0, errors.New("want CODE:SIGNAL with CODE 0-255 and SIGNAL 0-128")
	}
	return code, signal, nil
}
