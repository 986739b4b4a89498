package main

import (
	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/gpuacct/boardcmd"
	"github.com/aicloud/gpusuite/gpuacct/ingestcmd"
	"github.com/aicloud/gpusuite/gpuacct/migratecmd"
	"github.com/aicloud/gpusuite/gpuacct/notecmd"
	"github.com/aicloud/gpusuite/gpuacct/notifycmd"
	"github.com/aicloud/gpusuite/gpuacct/reportcmd"
	"github.com/aicloud/gpusuite/gpuacct/servecmd"
	"github.com/aicloud/gpusuite/internal/cli/cliwire"
)

// commands lists gpuacct's subcommands, one line each; their command lines
// live in this folder, their logic in internal/.
func commands(env Env) []*cli.Command {
	demo := demoCommand(env.Stdout, env.Stderr, env.Getenv)
	if !demo.SkipFlagParsing {
		// The demo takes options only; 'demo x1' would run it, x1 unread.
		// (The production build's stand-in reads its own line.)
		demo.Action = cliwire.NoArgs(demo.Action)
	}
	// What the report and board commands take from the process, once.
	report := reportcmd.System(env.Stdout, env.Stderr, env.Getenv)
	board := boardcmd.System(env.Stdout, env.Stderr, env.Getenv)
	return []*cli.Command{
		demo,
		agentCommand(env.Stdout, env.Stderr, env.Getenv),
		profileCommand(env.Stdout, env.Stderr, env.Getenv),
		ingestcmd.Command(env.Stdout, env.Stderr, env.Getenv),
		servecmd.Command(env.Stdout, env.Stderr, env.Getenv),
		reportcmd.ReportCommand(report),
		reportcmd.JobCommand(report),
		reportcmd.JobsCommand(report),
		reportcmd.CheckCommand(report),
		reportcmd.IgnoreCommand(report),
		reportcmd.UnignoreCommand(report),
		reportcmd.ExportCommand(report),
		reportcmd.PlotCommand(report),
		boardcmd.FreeCommand(board),
		boardcmd.StatusCommand(board),
		notecmd.Command(notecmd.System(env.Stdout, env.Stderr, env.Getenv)),
		notifycmd.Command(notifycmd.System(env.Stdout, env.Stderr, env.Getenv)),
		notifycmd.MailProgCommand(notifycmd.System(env.Stdout, env.Stderr, env.Getenv)),
		migratecmd.Command(migratecmd.System(env.Stdout, env.Stderr, env.Getenv)),
	}
}
