package budget

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/boundcmd"
)

// SlurmLimit is an association's GrpTRESMins as slurmctld enforces it:
// the limit and Slurm's own usage of it, in TRES-minutes, for each TRES
// that has a limit ("billing", "gres/gpu", ...). Slurm's limit is what
// stops jobs; a budget only warns.
type SlurmLimit struct {
	Account, User string
	Limit, Used   map[string]int64
}

// maxAssocOutput bounds scontrol's answer: a few hundred bytes an
// association, so some thousands of them.
const maxAssocOutput = 16 << 20

// ReadSlurmLimits asks slurmctld for the associations' GrpTRESMins
// (`scontrol show assoc_mgr flags=assoc`), within timeout.
func ReadSlurmLimits(ctx context.Context, timeout time.Duration) ([]SlurmLimit, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, line, err := boundcmd.Output(ctx, exec.CommandContext(ctx, "scontrol", "show", "assoc_mgr", "flags=assoc"), maxAssocOutput)
	if err != nil {
		if line != "" {
			return nil, fmt.Errorf("scontrol show assoc_mgr: %w: %s", err, line)
		}
		return nil, fmt.Errorf("scontrol show assoc_mgr: %w", err)
	}
	return ParseAssocMgr(out), nil
}

// ParseAssocMgr reads `scontrol show assoc_mgr flags=assoc`: each
// association (a "ClusterName=" line and the indented ones under it)
// with a GrpTRESMins limit, in Slurm's order. A TRES without a limit is
// written N(used) and left out.
func ParseAssocMgr(out []byte) []SlurmLimit {
	var all []SlurmLimit
	cur := -1
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "ClusterName=") {
			l := SlurmLimit{}
			for _, f := range strings.Fields(line) {
				k, v, _ := strings.Cut(f, "=")
				switch k {
				case "Account":
					l.Account = v
				case "UserName":
					l.User, _, _ = strings.Cut(v, "(") // alice(1001)
				}
			}
			all = append(all, l)
			cur = len(all) - 1
			continue
		}
		v, ok := strings.CutPrefix(line, "GrpTRESMins=")
		if !ok || cur < 0 {
			continue
		}
		for _, tres := range strings.Split(v, ",") {
			name, val, ok := strings.Cut(tres, "=")
			lim, used, ok2 := strings.Cut(strings.TrimSuffix(val, ")"), "(")
			if !ok || !ok2 || lim == "N" {
				continue
			}
			n, err1 := strconv.ParseInt(lim, 10, 64)
			u, err2 := strconv.ParseInt(used, 10, 64)
			if err1 != nil || err2 != nil {
				continue
			}
			if all[cur].Limit == nil {
				all[cur].Limit, all[cur].Used = map[string]int64{}, map[string]int64{}
			}
			all[cur].Limit[name], all[cur].Used[name] = n, u
		}
	}
	var out2 []SlurmLimit
	for _, l := range all {
		if l.Limit != nil {
			out2 = append(out2, l)
		}
	}
	return out2
}

// tresOf is the TRES a budget's unit is counted in by Slurm.
func tresOf(u Unit) string {
	if u == Billing {
		return "billing"
	}
	return "gres/gpu"
}

// SlurmFor is b's association's limit in b's unit (hours: minutes / 60)
// and Slurm's usage of it; ok is false when the association has none.
func SlurmFor(ls []SlurmLimit, b Budget) (limit, used float64, ok bool) {
	for _, l := range ls {
		if l.Account != b.Account || l.User != b.User {
			continue
		}
		n, has := l.Limit[tresOf(b.Unit)]
		if !has {
			return 0, 0, false
		}
		return float64(n) / 60, float64(l.Used[tresOf(b.Unit)]) / 60, true
	}
	return 0, 0, false
}
