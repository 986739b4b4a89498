package report

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// Export kinds and their columns (docs/reports.md; stable).
var ExportColumns = map[string][]string{
	"jobs": {"cluster", "job_id", "restart", "array_job_id", "array_task_id", "user", "account", "partition", "nodes", "gpus",
		"start", "end", "state", "end_estimated", "ignored", "alloc_gpu_s", "used_gpu_s", "idle_gpu_s", "energy_mj"},
	"gpus": {"cluster", "job_id", "restart", "node", "uuid", "index", "model", "sample_s", "util_s", "util_max", "mem_max_mib",
		"mem_total_mib", "energy_mj", "idle_s", "final"},
	// samples: then a column for each chosen metric (record.Catalogue's
	// name, unit last) that a job in the ledger (with Job: the job) has.
	"samples": {"node", "uuid", "index", "t_ms", "interval_ms", "job_id", "restart", "idle", "util_pct", "mem_util_pct", "mem_used_mib",
		"power_w", "energy_mj", "temp_c", "sm_clock_mhz", "missing"},
}

// ExportOptions say what to export where.
type ExportOptions struct {
	Kind   string
	Window timespec.Window
	// Format is csv or jsonl.
	Format string
	// Out receives everything unless SplitDir is set, which writes one
	// file per node (gpus, samples).
	Out      io.Writer
	SplitDir string
	NoHeader bool
	// Clusters, when set, keeps only their rows (Scope.Filter).
	Clusters []string
	// Progress, when set, is told the fraction done now and then.
	Progress func(done float64, rows int64)
	// Job, for samples, exports that job run's GPUs over its allocation
	// (to Now while it runs) in place of Window.
	Job *JobSpec
	Now time.Time
	// Human, for samples, writes times in Location and figures in their
	// units ("87 %", "312.5 W", "12.3 GiB") for people, not programs.
	Human    bool
	Location *time.Location
}

type rowWriter interface {
	write(vals []any) error
	flush() error
}

type csvRows struct {
	w   *csv.Writer
	rec []string
}

func (c *csvRows) write(vals []any) error {
	c.rec = c.rec[:0]
	for _, v := range vals {
		c.rec = append(c.rec, machineValue(v))
	}
	return c.w.Write(c.rec)
}

func (c *csvRows) flush() error { c.w.Flush(); return c.w.Error() }

type jsonRows struct {
	w    *bufio.Writer
	cols []string
}

func (j *jsonRows) write(vals []any) error {
	j.w.WriteByte('{')
	for i, v := range vals {
		if i > 0 {
			j.w.WriteByte(',')
		}
		k, _ := json.Marshal(j.cols[i])
		j.w.Write(k)
		j.w.WriteByte(':')
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		j.w.Write(b)
	}
	j.w.WriteString("}\n")
	return nil
}

func (j *jsonRows) flush() error { return j.w.Flush() }

func machineValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case string:
		return x
	case []byte:
		return string(x)
	case bool:
		if x {
			return "1"
		}
		return "0"
	}
	return fmt.Sprint(v)
}

func newRows(w io.Writer, format string, cols []string, noHeader bool) (rowWriter, error) {
	switch format {
	case "", "csv":
		cw := csv.NewWriter(w)
		if !noHeader {
			if err := cw.Write(cols); err != nil {
				return nil, err
			}
		}
		return &csvRows{w: cw}, nil
	case "jsonl", "json":
		return &jsonRows{w: bufio.NewWriterSize(w, 1<<16), cols: cols}, nil
	}
	return nil, fmt.Errorf("--format %q is not csv or jsonl", format)
}

// Export writes the rows of o.Kind in the window and returns how many.
func (d *Ledger) Export(ctx context.Context, o ExportOptions) (int64, error) {
	cols, ok := ExportColumns[o.Kind]
	if !ok {
		return 0, fmt.Errorf("unknown export %q: use jobs, gpus or samples", o.Kind)
	}
	if o.SplitDir != "" && o.Kind == "jobs" {
		return 0, fmt.Errorf("--split-dir: jobs span nodes; split gpus or samples")
	}
	if (o.Job != nil || o.Human) && o.Kind != "samples" {
		return 0, badInput("--job and --human are for the samples export")
	}
	var sc samplesScope
	if o.Kind == "samples" {
		var err error
		if sc, err = d.samplesScope(ctx, o); err != nil {
			return 0, err
		}
		cols = append(append([]string{}, cols...), sc.metrics...)
	}
	// billing is the jobs export's last column where the ledger billed
	// something (as the reports' BILLING column): a site without weights
	// gets the columns it got before.
	billing := false
	if o.Kind == "jobs" {
		var err error
		if billing, err = d.HasBilling(ctx); err != nil {
			return 0, fmt.Errorf("export jobs: %w", err)
		}
		if billing {
			cols = append(append([]string{}, cols...), "billing")
		}
	}
	files := map[string]rowWriter{}
	var closers []*os.File
	defer func() {
		for _, f := range closers {
			f.Close()
		}
	}()
	ext := ".csv"
	if o.Format == "jsonl" || o.Format == "json" {
		ext = ".jsonl"
	}
	var shared rowWriter
	writerFor := func(node string) (rowWriter, error) {
		if o.SplitDir == "" {
			if shared == nil {
				var err error
				if shared, err = newRows(o.Out, o.Format, cols, o.NoHeader); err != nil {
					return nil, err
				}
			}
			return shared, nil
		}
		if w, ok := files[node]; ok {
			return w, nil
		}
		if err := os.MkdirAll(o.SplitDir, 0o755); err != nil {
			return nil, err
		}
		f, err := os.Create(filepath.Join(o.SplitDir, strings.ReplaceAll(node, "/", "_")+ext))
		if err != nil {
			return nil, err
		}
		closers = append(closers, f)
		w, err := newRows(f, o.Format, cols, o.NoHeader)
		if err != nil {
			return nil, err
		}
		files[node] = w
		return w, nil
	}
	var n int64
	span := float64(o.Window.End.Unix() - o.Window.Start.Unix())
	// keep picks the samples' GPUs; the store picks jobs' and gpus' rows.
	keep := func(string) bool { return true }
	if len(o.Clusters) > 0 {
		want := set(o.Clusters)
		keep = func(c string) bool { return want[c] }
	}
	// Each column's figures are written to its unit's precision.
	units := make([]table.Unit, len(cols))
	for i, c := range cols {
		units[i] = table.UnitOf(c)
	}
	// emit writes one row; vals are the export's column values.
	emit := func(vals []any, nodeCol int, progress func([]any) float64) error {
		for i, v := range vals {
			if f, ok := v.(float64); ok {
				vals[i] = units[i].Round(f)
			}
		}
		node := ""
		if nodeCol >= 0 {
			node = machineValue(vals[nodeCol])
		}
		w, err := writerFor(node)
		if err != nil {
			return fmt.Errorf("export %s: %w", o.Kind, err)
		}
		if err := w.write(vals); err != nil {
			return fmt.Errorf("export %s: %w", o.Kind, err)
		}
		n++
		if o.Progress != nil && n%20000 == 0 {
			o.Progress(progress(vals), n)
		}
		return nil
	}
	// read runs one store read, telling its errors (d.wrap) from the
	// writers' (already worded).
	read := func(f func(fn func([]any) error) error, nodeCol int, progress func(vals []any) float64) error {
		var werr error
		err := f(func(vals []any) error {
			werr = emit(vals, nodeCol, progress)
			return werr
		})
		if werr != nil {
			return werr
		}
		return d.wrap(err)
	}
	from, to := o.Window.Start.Unix(), o.Window.End.Unix()
	switch o.Kind {
	case "jobs":
		err := read(func(fn func([]any) error) error {
			return d.st.ExportJobsEnergyIn(ctx, o.Clusters, from, to, func(vals []any) error {
				// The run's one energy as gpuacct job shows it
				// (splitEnergy): its GPUs' own counter differences when
				// each has one, else the ledger's, else power × time.
				n := len(ExportColumns["jobs"])
				counters, _ := vals[n+1].(int64)
				lacking, _ := vals[n+2].(int64)
				e, _ := vals[jobsEnergy].(int64)
				switch p, _ := vals[n].(float64); {
				case lacking == 0 && counters > 0:
					vals[jobsEnergy] = counters
				case e <= 0 && p > 0:
					vals[jobsEnergy] = int64(math.Round(p * 1000))
				}
				if billing {
					// billing-unit-seconds, at the GPU-seconds' precision
					b, _ := vals[n+3].(float64)
					if i, ok := vals[n+3].(int64); ok {
						b = float64(i)
					}
					vals[n] = table.UnitGPUSeconds.Round(b)
					return fn(vals[:n+1])
				}
				return fn(vals[:n])
			})
		}, -1, func(vals []any) float64 {
			if span <= 0 {
				return 0
			}
			s, _ := vals[10].(int64) // start
			return float64(s-from) / span
		})
		if err != nil {
			return n, err
		}
	case "gpus":
		err := read(func(fn func([]any) error) error { return d.exportGPUs(ctx, o.Clusters, from, to, len(cols), fn) }, 3, func([]any) float64 { return 0 })
		if err != nil {
			return n, err
		}
	case "samples":
		gs := sc.gpus
		conv := newSampleRow(cols, o.Human, o.Location)
		for i, g := range gs {
			if !keep(d.nodeCluster[g.NodeID]) {
				continue
			}
			frac := float64(i) / float64(len(gs))
			err := read(func(fn func([]any) error) error {
				row := func(vals []any) error {
					out, err := conv.convert(vals)
					if err != nil {
						return err
					}
					return fn(out)
				}
				if sc.job {
					return d.st.ExportJobSamples(ctx, d.nodeLabel(g.NodeID, o.Clusters), g, sc.jobID, sc.restart, sc.from, sc.to, row)
				}
				return d.st.ExportSamples(ctx, d.nodeLabel(g.NodeID, o.Clusters), g, sc.from, sc.to, row)
			}, 0, func([]any) float64 { return frac })
			if err != nil {
				return n, err
			}
			if o.Progress != nil {
				o.Progress(float64(i+1)/float64(len(gs)), n)
			}
		}
	}
	if shared == nil && o.SplitDir == "" {
		// Nothing matched: still write the header.
		if _, err := writerFor(""); err != nil {
			return 0, fmt.Errorf("export %s: %w", o.Kind, err)
		}
	}
	for _, w := range files {
		if err := w.flush(); err != nil {
			return n, fmt.Errorf("export %s: %w", o.Kind, err)
		}
	}
	if shared != nil {
		if err := shared.flush(); err != nil {
			return n, fmt.Errorf("export %s: %w", o.Kind, err)
		}
	}
	for _, f := range closers {
		if err := f.Sync(); err != nil {
			return n, fmt.Errorf("export %s: %w", o.Kind, err)
		}
	}
	return n, nil
}
