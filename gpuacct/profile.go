package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/agentproto"
	"github.com/aicloud/gpusuite/internal/cli/cliwire"
)

// profileCommand is `gpuacct profile`: ask this node's agent to sample one
// job's GPUs at a short interval for a while.
func profileCommand(stdout, stderr io.Writer, getenv func(string) string) *cli.Command {
	return &cli.Command{
		Name:      "profile",
		Usage:     "sample one job's GPUs on this node at a short interval for a while (root or the job's owner)",
		ArgsUsage: "JOBID",
		UsageText: `gpuacct profile JOBID [--interval 200ms] [--for 10m]

Asks the agent on this GPU server to sample the GPUs that JOBID holds here
every --interval (100ms steps, below agent.interval) for --for (at most
agent.profile_max_duration), from the agent's next cycle on; then the normal
interval takes over again. The samples, with the metrics agent.metrics
chooses, join the job's series (gpuacct job JOBID). Run it on the node, e.g.
through srun --overlap; a job on several nodes is profiled node by node.

Examples:
   gpuacct profile 4242                              # 200 ms for 10 minutes
   gpuacct profile 4242 --interval 100ms --for 1m
   srun --jobid 4242 --overlap gpuacct profile 4242 --for 30m`,
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "interval", Value: 200 * time.Millisecond, Usage: "sampling interval, at least 100ms in steps of 100ms"},
			&cli.DurationFlag{Name: "for", Value: 10 * time.Minute, Usage: "how long to profile"},
			&cli.StringFlag{Name: "socket", Usage: "the agent's profile socket (agent.profile_socket)", EnvVars: []string{"GPUSUITE_AGENT_PROFILE_SOCKET"}},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return cliwire.Usagef("profile takes one JOBID, e.g. gpuacct profile 4242")
			}
			job, err := strconv.ParseUint(c.Args().First(), 10, 32)
			if err != nil || job == 0 {
				return cliwire.Usagef("JOBID %q is not a Slurm job id (a number from 1)", c.Args().First())
			}
			iv, dur := c.Duration("interval"), c.Duration("for")
			if iv < agentproto.MinProfileInterval || iv%agentproto.MinProfileInterval != 0 {
				return cliwire.Usagef("--interval %s: use at least %s, in steps of %s", iv, agentproto.MinProfileInterval, agentproto.MinProfileInterval)
			}
			if dur < iv {
				return cliwire.Usagef("--for %s is shorter than --interval %s", dur, iv)
			}
			cfg, err := cliwire.LoadConfig(c, getenv)
			if err != nil {
				return err
			}
			path := cfg.Agent.ProfileSocket
			if c.IsSet("socket") {
				path = c.String("socket")
			}
			if path == "" {
				return fmt.Errorf("profiling is off on this node (agent.profile_socket is empty)")
			}
			resp, err := agentproto.AskProfile(context.Background(), path, 10*time.Second,
				agentproto.ProfileRequest{Job: job, IntervalMS: iv.Milliseconds(), ForMS: dur.Milliseconds()})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(stdout, "profiling job %d (run %d): %d GPU(s) every %s from %s until %s; the samples join the job's series (gpuacct job %d)\n",
				resp.Job, resp.Restart, len(resp.GPUs), iv, resp.Start.Local().Format(time.TimeOnly), resp.End.Local().Format(time.TimeOnly), resp.Job)
			return err
		},
	}
}
