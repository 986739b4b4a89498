package i18n

import (
	"strings"

	"github.com/mattn/go-runewidth"
)

// Terminal columns: a Japanese character takes two, so text is padded by
// its display width, not its length. go-runewidth is the module the
// report tables already measure with (internal/report/table), so a
// heading and the table under it agree on every character's width;
// ambiguous characters count one, as there.
func cond() *runewidth.Condition { return &runewidth.Condition{StrictEmojiNeutral: true} }

// Width is s's width in terminal columns.
func Width(s string) int { return cond().StringWidth(s) }

// Left is s padded with spaces on the right to w columns (fmt's %-Ns
// for ASCII).
func Left(s string, w int) string {
	if n := Width(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}

// Right is s padded with spaces on the left to w columns (fmt's %Ns for
// ASCII).
func Right(s string, w int) string {
	if n := Width(s); n < w {
		return strings.Repeat(" ", w-n) + s
	}
	return s
}
