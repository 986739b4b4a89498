package main

import (
	"io"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/cliwire"
	"github.com/aicloud/gpusuite/cliwire/cliwiretest"
)

// helpApp is nfs-sync's command tree as Main prepares it.
func helpApp() *cli.App {
	app := newApp(io.Discard, io.Discard, func(string) string { return "" })
	cliwire.Version(app)
	cliwire.ConfigDefaults(app)
	return app
}

func TestHelpDefaultsAreTheConfigs(t *testing.T) { cliwiretest.CheckDefaults(t, helpApp()) }

func TestHelpNamesTheProgramOnce(t *testing.T) { cliwiretest.CheckNoDoubledName(t, helpApp()) }

func TestHelpExamplesParse(t *testing.T) {
	cliwiretest.CheckExamplesParse(t, helpApp, nil)
}
