package plot

import (
	"image/color"
	"strconv"
	"strings"
)

// teamPalette is the team colors, distinct on light and dark
// backgrounds: the dashboard's and the PNG plots' one palette.
var teamPalette = [...]string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#3b9ab2", "#d37295", "#8cd17d"}

// Unassigned is the color of a team in parentheses ((unassigned)) and of
// a name no known team has.
const Unassigned = "#9a9a9a"

// TeamColors gives each known team its color by its place in the sorted
// list of all teams, so that a team has one color on every page and in
// every plot. known must be sorted; teams in parentheses are grey.
func TeamColors(known []string) map[string]string {
	out := map[string]string{}
	i := 0
	for _, t := range known {
		if strings.HasPrefix(t, "(") {
			out[t] = Unassigned
			continue
		}
		out[t] = teamPalette[i%len(teamPalette)]
		i++
	}
	return out
}

// TeamColor is team's color in colors (TeamColors), Unassigned when it
// has none.
func TeamColor(colors map[string]string, team string) string {
	if c, ok := colors[team]; ok {
		return c
	}
	return Unassigned
}

// rgb reads a "#rrggbb" color; anything else is Unassigned's grey.
func rgb(hex string) color.Color {
	v, err := strconv.ParseUint(strings.TrimPrefix(hex, "#"), 16, 32)
	if err != nil || len(hex) != 7 {
		return color.RGBA{R: 0x9a, G: 0x9a, B: 0x9a, A: 0xff}
	}
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}
