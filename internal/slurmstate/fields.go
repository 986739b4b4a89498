package slurmstate

import (
	"fmt"
	"strings"
	"time"
)

// scontrolTime is how scontrol prints a time, in slurmctld's zone.
const scontrolTime = "2006-01-02T15:04:05"

// record is one object of scontrol's output: its fields by key, and the
// order they came in (the first says what the record is).
type record struct {
	line   int
	first  string
	fields map[string]string
}

// records splits scontrol's output into records: one a line with
// --oneliner; without it, indented lines continue the record above.
func records(out []byte) ([]record, error) {
	var recs []record
	var cur []string
	start := 0
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		r, err := splitFields(strings.Join(cur, " "))
		if err != nil {
			return fmt.Errorf("line %d: %w", start, err)
		}
		r.line = start
		recs = append(recs, r)
		cur = cur[:0]
		return nil
	}
	for i, raw := range strings.Split(string(out), "\n") {
		line := strings.TrimRight(raw, " \t\r")
		if strings.TrimSpace(line) == "" {
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		}
		if line[0] != ' ' && line[0] != '\t' || len(cur) == 0 {
			if err := flush(); err != nil {
				return nil, err
			}
			start = i + 1
		}
		cur = append(cur, strings.TrimSpace(line))
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return recs, nil
}

// splitFields reads Key=value words. A word that is no Key= belongs to
// the value before it (OS=Linux 6.1.0 #1 SMP ...). Reason runs to its
// [user@time] bracket, so a reason may hold "=" (xid=79). Linear in
// the words, however they are arranged: the output may be 16 MiB.
func splitFields(s string) (record, error) {
	r := record{fields: map[string]string{}}
	words := strings.Fields(s)
	// next[j] is the first word from j on that closes a reason.
	next := make([]int, len(words)+1)
	next[len(words)] = -1
	for j := len(words) - 1; j >= 0; j-- {
		next[j] = next[j+1]
		if isReasonEnd(words[j]) {
			next[j] = j
		}
	}
	key, value := "", []string(nil)
	put := func() {
		if key != "" {
			r.fields[key] = strings.Join(value, " ")
		}
	}
	for i := 0; i < len(words); i++ {
		k, v, ok := fieldKey(words[i])
		if !ok {
			if key == "" {
				return r, fmt.Errorf("%q comes before any Key=value field: is this scontrol show output?", clip(words[i]))
			}
			value = append(value, words[i])
			continue
		}
		put()
		if key == "" {
			r.first = k
		}
		key, value = k, []string{v}
		if k == "Reason" && !isReasonEnd(v) && next[i+1] > i {
			value = append(value, words[i+1:next[i+1]+1]...)
			i = next[i+1]
		}
	}
	if key == "" {
		return r, fmt.Errorf("no Key=value field")
	}
	put()
	return r, nil
}

// isReasonEnd tells the [user@time] word that closes a reason.
func isReasonEnd(w string) bool {
	return strings.HasPrefix(w, "[") && strings.HasSuffix(w, "]") && strings.Contains(w, "@")
}

// fieldKey splits Key=value when the word starts with a key: a letter,
// then letters, digits, '_' or ':' (AllocNode:Sid).
func fieldKey(w string) (key, value string, ok bool) {
	k, v, found := strings.Cut(w, "=")
	if !found || k == "" {
		return "", "", false
	}
	for i, c := range k {
		letter := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '_' || c == ':')) {
			return "", "", false
		}
	}
	return k, v, true
}

// parseTime reads scontrol's time in loc; Unknown, None, N/A and
// (null) are the zero time.
func parseTime(s string, loc *time.Location) (time.Time, error) {
	switch s {
	case "", "Unknown", "None", "N/A", "(null)":
		return time.Time{}, nil
	}
	t, err := time.ParseInLocation(scontrolTime, s, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q is not scontrol's YYYY-MM-DDTHH:MM:SS", clip(s))
	}
	return t, nil
}

// list splits a comma list; (null) and empty are none.
func list(s string) []string {
	if s == "" || s == "(null)" || s == "N/A" {
		return nil
	}
	return strings.Split(s, ",")
}

// clip keeps error messages one short line however long the input.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
