// Package table writes report rows as an aligned terminal table, CSV, TSV,
// '|'-separated text or JSON. The machine formats are stable: column keys
// and number formats change only with a documented version bump
// (docs/reports.md).
package table

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/mattn/go-runewidth"
)

// Kind says how a column's values are shown.
type Kind int

// Column kinds.
const (
	Text Kind = iota
	Int
	// GPUSeconds are shown in the chosen Units: whole seconds, hours,
	// minutes, or a percentage of the row's reference (Row.Ref).
	GPUSeconds
	// Percent is a percentage, 0..100 (efficiency, share).
	Percent
	// KWh is energy in kilowatt-hours.
	KWh
	// Time is Unix seconds, shown as local date and time.
	Time
	// Elapsed is a duration in seconds, shown as Slurm does: [D-]HH:MM:SS.
	Elapsed
	// ResourceHours is an amount of a resource held over time
	// (CPU-hours, GiB-hours), in hours, not converted by Units.
	ResourceHours
)

// Units say how GPUSeconds columns are shown.
type Units string

// The units.
const (
	// Seconds are whole GPU-seconds, sreport's -t seconds: the exact
	// figures to compare with Slurm's.
	Seconds Units = "seconds"
	Hours   Units = "hours"
	Minutes Units = "minutes"
	Pct     Units = "percent"
)

// Column describes one column.
type Column struct {
	// Key is the machine name (CSV/TSV/-P header, JSON key); GPUSeconds
	// keys get the unit appended: alloc_gpu_hours.
	Key string
	// Title is the terminal header; GPUSeconds titles get the unit.
	Title string
	Kind  Kind
	// Drop orders what goes first when the terminal is too narrow:
	// higher drops sooner, 0 never drops.
	Drop int
	// Parent columns are left blank in Child rows of the terminal
	// table (a tree shows the team once above its users).
	Parent bool
	// Machine columns are written in the machine formats only: the
	// terminal table shows the same by other means (a tree's level by
	// indenting).
	Machine bool
}

// Row is one line: Cells in column order (string, int64, float64 or nil
// for no value); Ref is the denominator for Units percent.
type Row struct {
	Cells []any
	Ref   float64
	// Footer rows (totals) appear in the terminal table only.
	Footer bool
	// Child rows (a tree's users) leave Parent columns blank.
	Child bool
	// Indent is how many levels the Parent column's cell is indented
	// in the terminal table (an organisation's teams under it).
	Indent int
}

// Table is what a report produces.
type Table struct {
	Columns []Column
	Rows    []Row
	// Meta is written as JSON fields beside "rows" and as a title line
	// above a terminal table.
	Meta  []KV
	Title string
	// Notes are printed under a terminal table only.
	Notes []string
}

// KV is one meta field.
type KV struct {
	Key   string
	Value any
}

// Format is an output format.
type Format string

// The formats.
const (
	Aligned  Format = "table"
	CSV      Format = "csv"
	TSV      Format = "tsv"
	Parsable Format = "parsable"
	JSON     Format = "json"
)

// unitNames are the names --units takes; none is hours.
var unitNames = map[string]Units{"": Hours, string(Seconds): Seconds, string(Hours): Hours, string(Minutes): Minutes, string(Pct): Pct}

// ParseUnits reads --units (-t), case-insensitive as sreport's -t is.
func ParseUnits(s string) (Units, error) {
	return parseName("--units", s, unitNames, "seconds, minutes, hours or percent")
}

// formatNames are the names --format takes; none and "text" are the
// aligned table.
var formatNames = map[string]Format{"": Aligned, string(Aligned): Aligned, "text": Aligned, string(CSV): CSV, string(TSV): TSV,
	string(JSON): JSON, string(Parsable): Parsable}

// ParseFormat reads --format.
func ParseFormat(s string) (Format, error) {
	return parseName("--format", s, formatNames, "table, csv, tsv or json")
}

// parseName is s, case-insensitive, among names; the error names the
// flag and what it takes.
func parseName[T any](flag, s string, names map[string]T, takes string) (T, error) {
	if v, ok := names[strings.ToLower(s)]; ok {
		return v, nil
	}
	var none T
	return none, fmt.Errorf("%s %q is not %s", flag, s, takes)
}

// Options control writing.
type Options struct {
	Format   Format
	Units    Units
	NoHeader bool
	// Width is the terminal width; 0 means unlimited.
	Width int
	// TimeFormat formats Time cells in the terminal table.
	TimeFormat func(unix int64) string
}

// Write writes t to w.
func Write(w io.Writer, t *Table, o Options) error {
	if o.Units == "" {
		o.Units = Hours
	}
	var err error
	switch o.Format {
	case CSV:
		err = writeSep(w, t, o, ',')
	case TSV:
		err = writeSep(w, t, o, '\t')
	case Parsable:
		err = writeSep(w, t, o, '|')
	case JSON:
		err = writeJSON(w, t, o)
	default:
		err = writeAligned(w, t, o)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", o.Format, err)
	}
	return nil
}

// KeyIn is a column's machine name in units u.
func (c Column) KeyIn(u Units) string {
	if c.Kind != GPUSeconds {
		return c.Key
	}
	k, _ := gpuSecondsSuffixes(u)
	return c.Key + k
}

func (c Column) titleIn(u Units) string {
	if c.Kind != GPUSeconds {
		return c.Title
	}
	_, t := gpuSecondsSuffixes(u)
	return c.Title + t
}

// gpuSecondsSuffixes are what a GPUSeconds column's key and title end
// with in units u.
func gpuSecondsSuffixes(u Units) (key, title string) {
	switch u {
	case Seconds:
		return "_seconds", " GPU-S"
	case Minutes:
		return "_minutes", " GPU-MIN"
	case Pct:
		return "_pct", " %"
	}
	return "_hours", " GPU-H"
}

// value converts a cell to its machine value in units u: nil stays nil.
func value(c Column, cell any, ref float64, u Units) any {
	if cell == nil {
		return nil
	}
	switch c.Kind {
	case GPUSeconds:
		v := toFloat(cell)
		switch u {
		case Seconds:
			// Allocated GPU-seconds are integers already; used and
			// idle (sums of utilization × time) round to the nearest.
			if x, ok := cell.(int64); ok {
				return x
			}
			return int64(UnitGPUSeconds.Round(v))
		case Minutes:
			return UnitGPUMinutes.Round(v / 60)
		case Pct:
			if ref <= 0 {
				return nil
			}
			return UnitShare.Round(100 * v / ref)
		}
		return UnitGPUHours.Round(v / 3600)
	case Percent:
		return UnitPercent.Round(toFloat(cell))
	case KWh:
		return UnitKWh.Round(toFloat(cell))
	case ResourceHours:
		return UnitGPUHours.Round(toFloat(cell))
	case Int, Time, Elapsed:
		switch x := cell.(type) {
		case int64:
			return x
		case int:
			return int64(x)
		}
		return int64(toFloat(cell))
	}
	return fmt.Sprint(cell)
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	case int:
		return float64(x)
	}
	return math.NaN()
}

func machine(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case int64:
		return strconv.FormatInt(x, 10)
	case string:
		return x
	}
	return fmt.Sprint(v)
}

// machineRecords are t's lines in the machine formats: the header
// (unless NoHeader), then every row but the footers.
func machineRecords(t *Table, o Options) [][]string {
	var out [][]string
	if !o.NoHeader {
		hdr := make([]string, len(t.Columns))
		for i, c := range t.Columns {
			hdr[i] = c.KeyIn(o.Units)
		}
		out = append(out, hdr)
	}
	for _, r := range t.Rows {
		if r.Footer {
			continue
		}
		rec := make([]string, len(t.Columns))
		for i, c := range t.Columns {
			rec[i] = machine(value(c, r.Cells[i], r.Ref, o.Units))
		}
		out = append(out, rec)
	}
	return out
}

func writeSep(w io.Writer, t *Table, o Options, sep rune) error {
	if sep == ',' {
		cw := csv.NewWriter(w)
		for _, rec := range machineRecords(t, o) {
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	}
	// TSV and '|': no quoting, so separators and newlines inside a value
	// become spaces.
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == sep || r == '\n' || r == '\r' || r == '\t' {
				return ' '
			}
			return r
		}, s)
	}
	var b strings.Builder
	for _, cells := range machineRecords(t, o) {
		for i, c := range cells {
			if i > 0 {
				b.WriteRune(sep)
			}
			b.WriteString(clean(c))
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// orderedObject keeps the column order in JSON output.
type orderedObject struct {
	keys []string
	vals []any
}

func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(o.vals[i])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

func writeJSON(w io.Writer, t *Table, o Options) error {
	top := orderedObject{}
	for _, m := range t.Meta {
		top.keys = append(top.keys, m.Key)
		top.vals = append(top.vals, m.Value)
	}
	top.keys = append(top.keys, "units")
	top.vals = append(top.vals, string(o.Units))
	rows := make([]orderedObject, 0, len(t.Rows))
	for _, r := range t.Rows {
		if r.Footer {
			continue
		}
		obj := orderedObject{}
		for i, c := range t.Columns {
			obj.keys = append(obj.keys, c.KeyIn(o.Units))
			obj.vals = append(obj.vals, value(c, r.Cells[i], r.Ref, o.Units))
		}
		rows = append(rows, obj)
	}
	top.keys = append(top.keys, "rows")
	top.vals = append(top.vals, rows)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(top)
}

// human formats one cell for the terminal.
func human(c Column, cell any, ref float64, o Options) string {
	v := value(c, cell, ref, o.Units)
	if v == nil {
		if c.Kind == Text {
			return ""
		}
		return "-"
	}
	switch c.Kind {
	case GPUSeconds:
		if n, ok := v.(int64); ok {
			return thousands(float64(n), 0)
		}
		f := v.(float64)
		if o.Units == Pct {
			return strconv.FormatFloat(f, 'f', 1, 64)
		}
		return thousands(f, 1)
	case Percent:
		return strconv.FormatFloat(v.(float64), 'f', 1, 64)
	case KWh, ResourceHours:
		return thousands(v.(float64), 1)
	case Int:
		return thousands(float64(v.(int64)), 0)
	case Elapsed:
		return slurmElapsed(v.(int64))
	case Time:
		if o.TimeFormat != nil {
			return o.TimeFormat(v.(int64))
		}
		return strconv.FormatInt(v.(int64), 10)
	}
	return v.(string)
}

// thousands writes f with the given decimals and a comma every three
// digits: 12,345.6.
func thousands(f float64, decimals int) string {
	s := strconv.FormatFloat(f, 'f', decimals, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	for i, r := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	out := b.String()
	if frac != "" {
		out += "." + frac
	}
	if neg && strings.Trim(out, "0.,") != "" {
		out = "-" + out
	}
	return out
}

const minText = 6 // a text column is never cut below this

// display measures cells in terminal columns: East Asian wide characters
// take two. Ambiguous ones (like "…") take one whatever the locale says,
// so the output does not depend on the environment.
var display = &runewidth.Condition{StrictEmojiNeutral: true}

func writeAligned(w io.Writer, t *Table, o Options) error {
	var cols []int // indices of shown columns
	for i, c := range t.Columns {
		if !c.Machine {
			cols = append(cols, i)
		}
	}
	cells := make([][]string, len(t.Rows))
	for r, row := range t.Rows {
		cells[r] = make([]string, len(t.Columns))
		for i, c := range t.Columns {
			cells[r][i] = human(c, row.Cells[i], row.Ref, o)
			if row.Child && c.Parent {
				cells[r][i] = ""
			} else if c.Parent && row.Indent > 0 {
				cells[r][i] = strings.Repeat("  ", row.Indent) + cells[r][i]
			}
		}
	}
	width := make([]int, len(t.Columns))
	for i, c := range t.Columns {
		if !o.NoHeader {
			width[i] = display.StringWidth(c.titleIn(o.Units))
		}
		for r := range cells {
			width[i] = max(width[i], display.StringWidth(cells[r][i]))
		}
	}
	total := func() int {
		n := 0
		for k, i := range cols {
			if k > 0 {
				n += 2
			}
			n += width[i]
		}
		return n
	}
	var dropped []string
	if o.Width > 0 {
		// Cut long text columns to 20, then drop the least important
		// columns, then cut text further (down to 6).
		cut := func(floor int) {
			for total() > o.Width {
				widest := -1
				for _, i := range cols {
					if t.Columns[i].Kind == Text && width[i] > floor && (widest < 0 || width[i] > width[widest]) {
						widest = i
					}
				}
				if widest < 0 {
					return
				}
				width[widest] = max(floor, width[widest]-(total()-o.Width))
			}
		}
		cut(20)
		for total() > o.Width {
			drop := -1
			for k, i := range cols {
				if t.Columns[i].Drop > 0 && (drop < 0 || t.Columns[i].Drop > t.Columns[cols[drop]].Drop) {
					drop = k
				}
			}
			if drop < 0 {
				break
			}
			dropped = append(dropped, strings.ToLower(t.Columns[cols[drop]].titleIn(o.Units)))
			cols = append(cols[:drop], cols[drop+1:]...)
		}
		cut(minText)
	}
	var b strings.Builder
	if t.Title != "" && !o.NoHeader {
		b.WriteString(t.Title)
		b.WriteString("\n\n")
	}
	line := func(vals []string, header bool) {
		var l strings.Builder
		for k, i := range cols {
			if k > 0 {
				l.WriteString("  ")
			}
			v := fit(vals[i], width[i])
			pad := strings.Repeat(" ", width[i]-display.StringWidth(v))
			if t.Columns[i].Kind == Text {
				l.WriteString(v)
				if k < len(cols)-1 {
					l.WriteString(pad)
				}
			} else {
				l.WriteString(pad)
				l.WriteString(v)
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " "))
		b.WriteByte('\n')
	}
	if !o.NoHeader {
		hdr := make([]string, len(t.Columns))
		for i, c := range t.Columns {
			hdr[i] = c.titleIn(o.Units)
		}
		line(hdr, true)
	}
	for r := range cells {
		line(cells[r], false)
	}
	if !o.NoHeader {
		for _, n := range t.Notes {
			b.WriteString(n)
			b.WriteByte('\n')
		}
		if len(dropped) > 0 {
			fmt.Fprintf(&b, "(not shown in %d columns: %s; widen the terminal or use --format csv)\n", o.Width, strings.Join(dropped, ", "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fit cuts s to n terminal columns, marking the cut with "…".
func fit(s string, n int) string {
	return display.Truncate(s, n, "…")
}

// slurmElapsed writes seconds as sacct's Elapsed does: [D-]HH:MM:SS.
func slurmElapsed(s int64) string {
	if s < 0 {
		s = 0
	}
	d, s := s/86400, s%86400
	hms := fmt.Sprintf("%02d:%02d:%02d", s/3600, s%3600/60, s%60)
	if d > 0 {
		return fmt.Sprintf("%d-%s", d, hms)
	}
	return hms
}
