package cliwire_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
)

func TestReorder(t *testing.T) {
	app := &cli.App{
		Name:  "gpuacct",
		Flags: []cli.Flag{cliwire.ConfigFlag()},
		Commands: []*cli.Command{
			{Name: "status", Flags: []cli.Flag{&cli.BoolFlag{Name: "no-slurm"}, &cli.StringFlag{Name: "live-dir"}}},
			{Name: "report", Subcommands: []*cli.Command{
				{Name: "teams", Aliases: []string{"team"}, Flags: []cli.Flag{&cli.StringFlag{Name: "start"}, &cli.BoolFlag{Name: "json", Aliases: []string{"j"}}}},
			}},
			{Name: "demo", SkipFlagParsing: true},
		},
	}
	for _, tc := range []struct{ in, want string }{
		{"gpuacct", "gpuacct"},
		{"gpuacct status gpu01 --no-slurm --live-dir D", "gpuacct status --no-slurm --live-dir D gpu01"},
		{"gpuacct status --live-dir D gpu01 --no-slurm", "gpuacct status --live-dir D --no-slurm gpu01"},
		{"gpuacct status gpu01 --config F", "gpuacct --config F status gpu01"},
		{"gpuacct status gpu01 --config=F --live-dir=D", "gpuacct --config=F status --live-dir=D gpu01"},
		{"gpuacct report teams --start 2026-11-01 -j", "gpuacct report teams --start 2026-11-01 -j"},
		{"gpuacct report team x --start status", "gpuacct report teams --start status x"},
		{"gpuacct status gpu01 --bogus v", "gpuacct status --bogus gpu01 v"},
		{"gpuacct status gpu01 -- --no-slurm", "gpuacct status -- gpu01 --no-slurm"},
		{"gpuacct status --no-slurm -- gpu01", "gpuacct status --no-slurm -- gpu01"},
		{"gpuacct demo -- serve", "gpuacct demo -- serve"},
		{"gpuacct status - -5", "gpuacct status - -5"},
		{"gpuacct status gpu01 --help", "gpuacct status --help"},
		{"gpuacct report -h teams x", "gpuacct report -h teams"},
		{"gpuacct status --version", "gpuacct --version status"},
		{"gpuacct demo serve --dir D --config F", "gpuacct demo serve --dir D --config F"},
		{"gpuacct nosuch --config F", "gpuacct --config F nosuch"},
		{"gpuacct status --live-dir", "gpuacct status --live-dir"},
		// A value missing at the end takes no argument as its value: the
		// line ends where the option is read, which refuses it.
		{"gpuacct status gpu01 --live-dir", "gpuacct status --live-dir"},
		{"gpuacct status gpu01 --no-slurm --live-dir", "gpuacct status --no-slurm --live-dir"},
		{"gpuacct status gpu01 --config", "gpuacct --config"},
		{"gpuacct report teams x --config", "gpuacct --config"},
		{"gpuacct report teams x --start", "gpuacct report teams --start"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got := strings.Join(cliwire.Reorder(app, strings.Fields(tc.in)), " ")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Reorder(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}
