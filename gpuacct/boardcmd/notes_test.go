package boardcmd

import (
	"testing"

	"github.com/aicloud/gpusuite/internal/board"
)

// A note's cell stays on its line and in its order: control and format
// characters (a right-to-left override would make the author seem
// another) never reach the terminal.
func TestNoteText(t *testing.T) {
	for _, tc := range []struct {
		name string
		note board.Note
		max  int
		want string
	}{
		{"plain", board.Note{ID: 3, Text: "booked for the deadline", Author: "alice"}, 0, "#3 booked for the deadline (alice)"},
		{"clipped", board.Note{ID: 3, Text: "booked for the deadline", Author: "alice"}, 10, "#3 booked fo… (alice)"},
		{"newline and escape", board.Note{ID: 4, Text: "a\nb\x1b[2Jc", Author: "bob"}, 0, "#4 a?b?[2Jc (bob)"},
		{"right-to-left override", board.Note{ID: 5, Text: "x\u202e(eve)", Author: "bob\u200b"}, 0, "#5 x?(eve) (bob?)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := noteText(tc.note, tc.max); got != tc.want {
				t.Errorf("noteText = %q, want %q", got, tc.want)
			}
		})
	}
}
