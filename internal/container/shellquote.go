package container

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Quote quotes s as one word for bash, so that a printed command line is
// safe to paste whatever s holds. Words of only safe characters stay as
// they are; printable text goes in single quotes, where bash takes every
// byte literally; anything else (newlines, control characters, bytes that
// are not UTF-8, invisible formatting runes) goes in $'...' with each such
// byte written as \xHH, so the printed line is one line of printable
// characters that cannot move the terminal's cursor or end a heredoc.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	safe, printable := true, true
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				printable = false
			}
		}
		if !unicode.IsPrint(r) {
			printable = false
		}
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./-_", r)) {
			safe = false
		}
	}
	switch {
	case safe:
		return s
	case printable:
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\\' || r == '\'':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == utf8.RuneError && n == 1 || !unicode.IsPrint(r):
			for _, c := range []byte(s[i : i+n]) {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	b.WriteByte('\'')
	return b.String()
}

// QuoteArgs joins argv into one shell command line.
func QuoteArgs(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}

// pasteable reports whether s can be printed as heredoc lines: printable
// UTF-8 and newlines only, so pasting it types nothing but its text (a tab
// pasted into an interactive bash would ask for completion).
func pasteable(s string) bool {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return false
			}
		}
		if r != '\n' && !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// FeedCommand is a command line that runs argv with stdin as its standard
// input, for --dry-run. stdin is written as a heredoc when it is pasteable
// text ending in a newline, under a delimiter that is none of its lines
// (the delimiter is quoted, so bash expands nothing in it); otherwise it
// is one quoted printf argument.
func FeedCommand(argv []string, stdin string) string {
	if !pasteable(stdin) || !strings.HasSuffix(stdin, "\n") {
		return "printf %s " + Quote(stdin) + " | " + QuoteArgs(argv) + "\n"
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(stdin, "\n") {
		lines[l] = true
	}
	delim := "SRUN_WRAP_EOF"
	for n := 1; lines[delim]; n++ {
		delim = fmt.Sprintf("SRUN_WRAP_EOF_%d", n)
	}
	return QuoteArgs(argv) + " <<'" + delim + "'\n" + stdin + delim + "\n"
}
