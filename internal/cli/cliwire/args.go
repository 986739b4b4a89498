package cliwire

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// commandPath is what the user typed before the options: "gpuacct note
// add".
func commandPath(c *cli.Context) string {
	var names []string
	for _, l := range c.Lineage() {
		if l.Command != nil && l.Command.Name != "" {
			names = append([]string{l.Command.Name}, names...)
		}
	}
	if len(names) == 0 || names[0] != c.App.Name {
		names = append([]string{c.App.Name}, names...)
	}
	return strings.Join(names, " ")
}

// SetStrings overrides what the config file gave with each string flag
// the user set (flag > env > file > default): names maps a flag to the
// config field it sets.
func SetStrings(c *cli.Context, names map[string]*string) {
	for name, dst := range names {
		if c.IsSet(name) {
			*dst = c.String(name)
		}
	}
}
