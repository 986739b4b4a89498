package main

import (
	"io"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/cliwire"
	"github.com/aicloud/gpusuite/cliwire/cliwiretest"
)

// helpApp is gpuacct's command tree as the binary prepares it.
func helpApp() *cli.App {
	app := newApp(Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }})
	cliwire.Prepare(app)
	return app
}

func TestHelpDefaultsAreTheConfigs(t *testing.T) { cliwiretest.CheckDefaults(t, helpApp()) }

func TestHelpNamesTheProgramOnce(t *testing.T) { cliwiretest.CheckNoDoubledName(t, helpApp()) }

func TestHelpExamplesParse(t *testing.T) {
	cliwiretest.CheckExamplesParse(t, helpApp, map[string]string{
		"systemctl enable --now gpuacct-serve            # packaging/systemd/gpuacct-serve.service": "how the unit is started",
		"curl -s localhost:9466/metrics | grep gpuacct_ingest":                                      "what serve's /metrics answers",
		"curl -s localhost:9466/api/v1/free":                                                        "what serve's API answers",
		"curl -s localhost:9466/metrics | grep gpusuite_gpu_utilization":                            "what the agent's /metrics answers",
		`*/10 * * * * gpuacct check >/dev/null || mail -s "gpuacct" root   # crontab`:               "a crontab line",
		"command[gpuacct]=/usr/bin/gpuacct check                           # nrpe.cfg":              "an nrpe.cfg line",
	})
}
