package container

import (
	"fmt"
	"strings"
)

// argKind says whether an srun option takes a value.
type argKind int

const (
	noArg argKind = iota
	reqArg
	optArg // only as --opt=value
)

// srunLong lists srun's long options (Slurm 22.05) and whether they take a
// value, so srun-wrap can pass any of them through and still tell where
// the command starts. pyxis's options are included: users may add their own.
var srunLong = map[string]argKind{
	"accel-bind": reqArg, "account": reqArg, "acctg-freq": reqArg, "bb": reqArg, "bbf": reqArg,
	"bcast": optArg, "bcast-exclude": reqArg, "begin": reqArg, "chdir": reqArg,
	"cluster-constraint": reqArg, "clusters": reqArg, "comment": reqArg, "compress": optArg,
	"constraint": reqArg, "container": reqArg, "contiguous": noArg, "core-spec": reqArg,
	"cores-per-socket": reqArg, "cpu-bind": reqArg, "cpu-freq": reqArg, "cpus-per-gpu": reqArg,
	"cpus-per-task": reqArg, "deadline": reqArg, "delay-boot": reqArg, "dependency": reqArg,
	"disable-status": noArg, "distribution": reqArg, "epilog": reqArg, "error": reqArg,
	"exact": noArg, "exclude": reqArg, "exclusive": optArg, "export": reqArg,
	"extra-node-info": reqArg, "gid": reqArg, "gpu-bind": reqArg, "gpu-freq": reqArg,
	"gpus": reqArg, "gpus-per-node": reqArg, "gpus-per-socket": reqArg, "gpus-per-task": reqArg,
	"gres": reqArg, "gres-flags": reqArg, "het-group": reqArg, "hint": reqArg, "hold": noArg,
	"immediate": optArg, "input": reqArg, "job-name": reqArg, "jobid": reqArg,
	"kill-on-bad-exit": optArg, "label": noArg, "licenses": reqArg, "mail-type": reqArg,
	"mail-user": reqArg, "mcs-label": reqArg, "mem": reqArg, "mem-bind": reqArg,
	"mem-per-cpu": reqArg, "mem-per-gpu": reqArg, "mincpus": reqArg, "mpi": reqArg,
	"msg-timeout": reqArg, "multi-prog": noArg, "network": reqArg, "nice": optArg,
	"no-allocate": noArg, "no-kill": optArg, "nodefile": reqArg, "nodelist": reqArg,
	"nodes": reqArg, "ntasks": reqArg, "ntasks-per-core": reqArg, "ntasks-per-gpu": reqArg,
	"ntasks-per-node": reqArg, "ntasks-per-socket": reqArg, "open-mode": reqArg,
	"output": reqArg, "overcommit": noArg, "overlap": noArg, "oversubscribe": noArg,
	"partition": reqArg, "power": reqArg, "prefer": reqArg, "preserve-env": noArg,
	"priority": reqArg, "profile": reqArg, "prolog": reqArg, "propagate": optArg, "pty": noArg,
	"qos": reqArg, "quiet": noArg, "quit-on-interrupt": noArg, "reboot": noArg,
	"relative": reqArg, "reservation": reqArg, "resv-ports": optArg, "send-libs": optArg,
	"signal": reqArg, "slurmd-debug": reqArg, "sockets-per-node": reqArg, "spread-job": noArg,
	"switches": reqArg, "task-epilog": reqArg, "task-prolog": reqArg, "test-only": noArg,
	"thread-spec": reqArg, "threads": reqArg, "threads-per-core": reqArg, "time": reqArg,
	"time-min": reqArg, "tmp": reqArg, "tres-per-task": reqArg, "uid": reqArg,
	"unbuffered": noArg, "use-min-nodes": noArg, "verbose": noArg, "wait": reqArg,
	"wckey": reqArg, "whole": noArg, "x11": optArg,
	// pyxis
	"container-image": reqArg, "container-mounts": reqArg, "container-workdir": reqArg,
	"container-name": reqArg, "container-save": reqArg, "container-mount-home": noArg,
	"no-container-mount-home": noArg, "container-remap-root": noArg,
	"no-container-remap-root": noArg, "container-entrypoint": noArg,
	"no-container-entrypoint": noArg, "container-entrypoint-log": noArg,
	"container-writable": noArg, "container-readonly": noArg, "container-env": reqArg,
}

// srunShort maps srun's short options to whether they take a value.
var srunShort = map[byte]argKind{
	'A': reqArg, 'b': reqArg, 'B': reqArg, 'c': reqArg, 'C': reqArg, 'd': reqArg, 'D': reqArg,
	'e': reqArg, 'E': noArg, 'F': reqArg, 'G': reqArg, 'H': noArg, 'i': reqArg, 'I': optArg,
	'J': reqArg, 'k': noArg, 'K': optArg, 'l': noArg, 'L': reqArg, 'm': reqArg, 'M': reqArg,
	'n': reqArg, 'N': reqArg, 'o': reqArg, 'O': noArg, 'p': reqArg, 'q': reqArg, 'Q': noArg,
	'r': reqArg, 's': noArg, 'S': reqArg, 't': reqArg, 'T': reqArg, 'u': noArg, 'v': noArg,
	'w': reqArg, 'W': reqArg, 'x': reqArg, 'X': noArg, 'Z': noArg,
}

// Split is a command line cut into srun-wrap's own options, srun options to
// pass through, and the command.
type Split struct {
	Own  []string
	Srun []string
	Cmd  []string
}

// SplitArgs cuts args (without the program name) at the first word that is
// not an option, or at "--". own maps srun-wrap's long option names (and
// single-letter aliases) to whether they take a value; they win over
// srun's. Anything else must be an srun option. Options after the command
// belong to the command.
func SplitArgs(args []string, own map[string]bool) (Split, error) {
	var s Split
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			s.Cmd = append(s.Cmd, args[i+1:]...)
			return s, nil
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			s.Cmd = append(s.Cmd, args[i:]...)
			return s, nil
		}
		if strings.HasPrefix(a, "--") {
			name, _, hasVal := strings.Cut(a[2:], "=")
			if takes, ok := own[name]; ok {
				s.Own = append(s.Own, a)
				if takes && !hasVal {
					if i+1 == len(args) {
						return s, fmt.Errorf("option --%s needs a value", name)
					}
					i++
					s.Own = append(s.Own, args[i])
				}
				continue
			}
			kind, ok := srunLong[name]
			if !ok {
				return s, fmt.Errorf("unknown option --%s: it is neither a srun-wrap option nor an srun option (see srun-wrap --help and srun --help)", name)
			}
			s.Srun = append(s.Srun, a)
			if kind == noArg && hasVal {
				return s, fmt.Errorf("option --%s takes no value", name)
			}
			if kind == reqArg && !hasVal {
				if i+1 == len(args) {
					return s, fmt.Errorf("srun option --%s needs a value", name)
				}
				i++
				s.Srun = append(s.Srun, args[i])
			}
			continue
		}
		// Short option(s): -p gpu, -pgpu, -N1, -lv.
		letter := a[1]
		if takes, ok := own[string(letter)]; ok && len(a) == 2 {
			s.Own = append(s.Own, a)
			if takes {
				if i+1 == len(args) {
					return s, fmt.Errorf("option -%c needs a value", letter)
				}
				i++
				s.Own = append(s.Own, args[i])
			}
			continue
		}
		for k := 1; k < len(a); k++ {
			kind, ok := srunShort[a[k]]
			if !ok {
				return s, fmt.Errorf("unknown option -%c in %q: it is neither a srun-wrap option nor an srun option (see srun-wrap --help)", a[k], a)
			}
			if kind == reqArg {
				if k+1 < len(a) {
					break // value attached: -pgpu
				}
				if i+1 == len(args) {
					return s, fmt.Errorf("srun option -%c needs a value", a[k])
				}
				s.Srun = append(s.Srun, a)
				i++
				a = args[i]
				s.Srun = append(s.Srun, a)
				a = ""
				break
			}
			if kind == optArg {
				break
			}
		}
		if a != "" {
			s.Srun = append(s.Srun, a)
		}
	}
	return s, nil
}

// HasOption reports whether srun options opts set the long option name or
// its short letter (0 for none).
func HasOption(opts []string, name string, short byte) bool {
	for _, o := range opts {
		if o == "--"+name || strings.HasPrefix(o, "--"+name+"=") {
			return true
		}
		if short != 0 && len(o) >= 2 && o[0] == '-' && o[1] == short {
			return true
		}
	}
	return false
}
