// Package cliwire is what every gpusuite binary's command line shares: the
// --config flag, --version, one-line usage errors and the exit codes of
// package exitcode (0 success, 2 usage, 1 failure). Only the binaries'
// folders import it and urfave/cli; packages under internal/ take plain
// values, but for those under internal/cli, the command-line libraries,
// which are the one exception by name (deps_test.go holds the rule).
package cliwire

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/buildinfo"
	"github.com/aicloud/gpusuite/internal/cli/exitcode"
	"github.com/aicloud/gpusuite/internal/config"
)

// UsageError marks bad input on the command line: exit 2.
type UsageError = exitcode.UsageError

// Usagef is a usage error (exit 2) with a formatted message.
func Usagef(format string, a ...any) error { return &UsageError{Err: fmt.Errorf(format, a...)} }

// ExitError carries an exit code out of an action. A nil Err means the
// message was already printed (or there is none).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}
func (e *ExitError) Unwrap() error { return e.Err }

// Code is the exit code for err, and the one line to print ("" for none).
func Code(err error) (int, string) {
	if err == nil {
		return 0, ""
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Err == nil {
			return ee.Code, ""
		}
		return ee.Code, ee.Err.Error()
	}
	var ue *UsageError
	if errors.As(err, &ue) {
		return exitcode.Usage, err.Error()
	}
	var ec cli.ExitCoder
	if errors.As(err, &ec) && ec.ExitCode() != 0 {
		return ec.ExitCode(), err.Error()
	}
	return exitcode.Failure, err.Error()
}

// Finish prints err as one line "prog: message" on stderr and returns the
// exit code.
func Finish(prog string, stderr io.Writer, err error) int {
	code, msg := Code(err)
	if msg != "" {
		fmt.Fprintf(stderr, "%s: %s\n", prog, strings.TrimSpace(msg))
	}
	return code
}

// ConfigFlag is the --config flag every command carries.
func ConfigFlag() *cli.StringFlag {
	return &cli.StringFlag{
		Name:    "config",
		Usage:   "TOML config file (default " + config.DefaultPath + ")",
		EnvVars: []string{config.EnvPath},
	}
}

// LedgerFlags are --db and --store-url: the ledger a command reads or
// writes (store.path, store.url); SetLedger applies them.
func LedgerFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "db", Usage: "accounting database (store.path)", EnvVars: []string{"GPUSUITE_DB"}},
		StoreURLFlag(),
	}
}

// SetLedger puts the ledger flags that were set over st: flag > env > file.
func SetLedger(c *cli.Context, st *config.Store) {
	SetStrings(c, map[string]*string{"db": &st.Path, "store-url": &st.URL})
}

// StoreURLFlag is --store-url, the PostgreSQL ledger every command that
// reads or writes the ledger takes beside its own --db.
func StoreURLFlag() *cli.StringFlag {
	return &cli.StringFlag{
		Name:    "store-url",
		Usage:   "PostgreSQL ledger, postgres://... (store.url; \"\": the SQLite file of --db)",
		EnvVars: []string{"GPUSUITE_STORE_URL"},
	}
}

// LoadConfig loads the file named by --config / $GPUSUITE_CONFIG (or the
// default path, which may be absent). Commands then apply their own flags
// where c.IsSet, giving flag > env > file > default.
func LoadConfig(c *cli.Context, getenv func(string) string) (config.Config, error) {
	path, explicit := config.Path(c.String("config"), getenv)
	return config.Load(path, explicit)
}

// UsageLine turns a flag-parsing error into the one line a user reads:
// "unknown option --bogus (see sbuild --help)". cmdPath is what the user
// typed before the options ("gpuacct report teams").
func UsageLine(cmdPath string, err error) error {
	if name, ok := strings.CutPrefix(err.Error(), "flag needs an argument: "); ok {
		if name = strings.TrimLeft(name, "-"); len(name) > 1 {
			name = "-" + name
		}
		return Usagef("option -%s needs a value (see '%s --help')", name, cmdPath)
	}
	if opt, ok := UnknownOption(err); ok {
		return Usagef("unknown option %s (see '%s --help')", opt, cmdPath)
	}
	return Usagef("%v (see '%s --help')", err, cmdPath)
}

// UnknownOption is the option a flag-parsing error refuses as not
// defined, as the user typed it (the flag package reports --bogus as
// -bogus), and whether err is that error.
func UnknownOption(err error) (string, bool) {
	opt, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: ")
	if !ok {
		return "", false
	}
	if len(opt) > 2 && opt[0] == '-' && opt[1] != '-' {
		opt = "-" + opt
	}
	return opt, true
}

// Prepare wires app for the house policy: output through app's writers, no
// os.Exit inside urfave/cli, --version from buildinfo, the configuration's
// defaults in --help, and one-line usage errors (exit 2) on the app and
// every command under it that has none.
func Prepare(app *cli.App) {
	app.HideHelpCommand = true
	app.ExitErrHandler = func(*cli.Context, error) {}
	Version(app)
	ConfigDefaults(app)
	if app.OnUsageError == nil {
		name := app.Name
		app.OnUsageError = func(_ *cli.Context, err error, _ bool) error { return UsageLine(name, err) }
	}
	oneLine(app.Commands, app.Name+" ")
}

// Version gives app --version (no -v: srun-wrap passes srun's -v on),
// printing buildinfo's text.
func Version(app *cli.App) {
	app.Version = buildinfo.Version()
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version and build, then exit", DisableDefaultText: true}
	cli.VersionPrinter = func(c *cli.Context) {
		fmt.Fprintln(c.App.Writer, buildinfo.Print(c.App.Name))
	}
}

func oneLine(cmds []*cli.Command, parent string) {
	for _, c := range cmds {
		path := parent + c.Name
		if c.OnUsageError == nil {
			c.OnUsageError = func(_ *cli.Context, err error, _ bool) error { return UsageLine(path, err) }
		}
		oneLine(c.Subcommands, path+" ")
	}
}

// Run prepares app, runs it on args with their options anywhere
// (Reorder) and returns the exit code, having printed any error as one
// line "name: message".
func Run(app *cli.App, args []string) int {
	Prepare(app)
	return Finish(app.Name, app.ErrWriter, app.Run(Reorder(app, args)))
}
