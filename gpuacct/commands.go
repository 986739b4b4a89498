package main

import (
	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/gpuacct/demo"
	"github.com/aicloud/gpusuite/gpuacct/ingest"
	"github.com/aicloud/gpusuite/gpuacct/serve"
	"github.com/aicloud/gpusuite/internal/report"
)

// commands lists gpuacct's subcommands; each lives in its own package under
// internal/ and is added here with one line.
func commands(env Env) []*cli.Command {
	return []*cli.Command{
		demo.Command(env.Stdout),
		agentCommand(env.Stdout, env.Stderr, env.Getenv),
		ingest.Command(env.Stdout, env.Stderr, env.Getenv),
		serve.Command(env.Stdout, env.Stderr, env.Getenv),
		report.ReportCommand(report.System(env.Stdout, env.Stderr, env.Getenv)),
		report.JobCommand(report.System(env.Stdout, env.Stderr, env.Getenv)),
		report.CheckCommand(report.System(env.Stdout, env.Stderr, env.Getenv)),
		report.IgnoreCommand(report.System(env.Stdout, env.Stderr, env.Getenv)),
		report.UnignoreCommand(report.System(env.Stdout, env.Stderr, env.Getenv)),
		report.ExportCommand(report.System(env.Stdout, env.Stderr, env.Getenv)),
		report.PlotCommand(report.System(env.Stdout, env.Stderr, env.Getenv)),
	}
}
