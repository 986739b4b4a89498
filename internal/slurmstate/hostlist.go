package slurmstate

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxHostlistNames bounds one hostlist expansion: gpu[1-999999999] is
// a few bytes of text and must not become a billion strings.
const MaxHostlistNames = 100_000

// maxBrackets bounds the ranges in one name (Slurm's own hostlists
// have at most five dimensions), and so expandOne's recursion.
const maxBrackets = 8

// errTooMany: an expansion went over its bound.
var errTooMany = errors.New("too many names")

// ExpandHostlist expands a Slurm hostlist (gpu[01-03,07],login1,
// rack[1-2]-n[1-4]) into names, keeping zero padding. It refuses more
// than max names (MaxHostlistNames when max <= 0).
func ExpandHostlist(expr string, max int) ([]string, error) {
	if max <= 0 {
		max = MaxHostlistNames
	}
	expr = strings.TrimSpace(expr)
	if expr == "" || expr == "(null)" {
		return nil, nil
	}
	var names []string
	for _, part := range splitTop(expr) {
		if part == "" {
			return nil, fmt.Errorf("hostlist %q: empty name between commas", clip(expr))
		}
		if strings.Count(part, "[") > maxBrackets {
			return nil, fmt.Errorf("hostlist %q: a name has more than %d bracketed ranges", clip(expr), maxBrackets)
		}
		got, err := expandOne(part, max-len(names))
		if errors.Is(err, errTooMany) {
			return nil, fmt.Errorf("hostlist %q expands to more than %d names", clip(expr), max)
		}
		if err != nil {
			return nil, fmt.Errorf("hostlist %q: %w", clip(expr), err)
		}
		names = append(names, got...)
	}
	return names, nil
}

// splitTop splits at commas outside brackets (and parentheses, so
// gpu:h100:3(IDX:0,2) stays one GRES).
func splitTop(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// expandOne expands one name with any number of [ranges], at most max.
func expandOne(s string, max int) ([]string, error) {
	open := strings.IndexByte(s, '[')
	if open < 0 {
		if strings.ContainsAny(s, "]") {
			return nil, fmt.Errorf("%q has ']' without '['", clip(s))
		}
		if max < 1 {
			return nil, errTooMany
		}
		return []string{s}, nil
	}
	end := strings.IndexByte(s[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("%q has '[' without ']'", clip(s))
	}
	end += open
	prefix, ranges, rest := s[:open], s[open+1:end], s[end+1:]
	if strings.ContainsAny(prefix, "]") || strings.ContainsAny(ranges, "[") {
		return nil, fmt.Errorf("%q has nested or unbalanced brackets", clip(s))
	}
	nums, err := expandRanges(ranges, max)
	if err != nil {
		return nil, err
	}
	// The tail's names, each bounded so that the product stays under max.
	tails, err := expandOne(rest, max/len(nums))
	if err != nil {
		return nil, err
	}
	if len(nums)*len(tails) > max {
		return nil, errTooMany
	}
	out := make([]string, 0, len(nums)*len(tails))
	for _, n := range nums {
		for _, t := range tails {
			out = append(out, prefix+n+t)
		}
	}
	return out, nil
}

// expandRanges expands 01-03,07 into 01 02 03 07.
func expandRanges(s string, max int) ([]string, error) {
	var out []string
	for _, r := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.ParseUint(lo, 10, 32)
		b, err2 := strconv.ParseUint(hi, 10, 32)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("range %q is not N or N-M with decimal numbers", clip(r))
		}
		if b < a {
			return nil, fmt.Errorf("range %q runs backwards", clip(r))
		}
		if b-a+1 > uint64(max-len(out)) || max-len(out) < 1 {
			return nil, errTooMany
		}
		width := len(lo)
		for n := a; n <= b; n++ {
			out = append(out, fmt.Sprintf("%0*d", width, n))
		}
	}
	return out, nil
}
