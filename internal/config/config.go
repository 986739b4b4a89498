// Package config loads the one TOML file that every gpusuite binary shares.
//
// Precedence is flag > environment > file > default: Load fills defaults and
// the file; commands then apply the flags and GPUSUITE_* variables that were
// set (urfave/cli's IsSet covers both).
//
// Files: config.go (Config, Load, the shared sections), read.go (the
// bounded read, errors with their line), hookload.go (LoadHook: the hooks'
// spool kept when the rest is broken), and one file per program's section:
// agent.go, board.go, container.go, nfssync.go, notify.go, report.go,
// store.go (store and ingest), web.go.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// DefaultPath is where the site configuration lives unless --config or
// GPUSUITE_CONFIG say otherwise.
const DefaultPath = "/etc/gpusuite/gpusuite.toml"

// EnvPath names the variable that overrides DefaultPath.
const EnvPath = "GPUSUITE_CONFIG"

// Config is the whole file. Each section has its own type so each binary
// owns the keys it reads.
type Config struct {
	Cluster   Cluster   `toml:"cluster"`
	Spool     Spool     `toml:"spool"`
	Hooks     Hooks     `toml:"hooks"`
	GPU       GPU       `toml:"gpu"`
	NFSSync   NFSSync   `toml:"nfssync"`
	Container Container `toml:"container"`
	Store     Store     `toml:"store"`
	Ingest    Ingest    `toml:"ingest"`
	Agent     Agent     `toml:"agent"`
	Report    Report    `toml:"report"`
	Web       Web       `toml:"web"`
	Board     Board     `toml:"board"`
	Notify    Notify    `toml:"notify"`
	Budget    Budget    `toml:"budget"`
	Billing   Billing   `toml:"billing"`
}

// Cluster names this cluster and node when Slurm does not.
type Cluster struct {
	// Name is used when SLURM_CLUSTER_NAME is absent.
	Name string `toml:"name"`
	// Node is used when SLURMD_NODENAME is absent; empty means the host name.
	Node string `toml:"node"`
}

// Spool is the node-local directory the hooks write to.
type Spool struct {
	Dir string `toml:"dir"`
}

// Hooks configures prolog and epilog.
type Hooks struct {
	// Timeout bounds a whole hook run; past it the hook logs and exits 0.
	Timeout Duration `toml:"timeout"`
	// NVMLTimeout bounds each NVML call on the hook path.
	NVMLTimeout Duration `toml:"nvml_timeout"`
	// HealthCheck makes the prolog exit non-zero (which drains the node)
	// when an allocated GPU still runs another job's process.
	HealthCheck bool `toml:"health_check"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `toml:"log_level"`
	// Root is where the hooks find the node's /dev and /proc: "/" on a
	// node; the real-Slurm tests' MIG node points it at fake nvidia-caps.
	Root string `toml:"root"`
}

// GPU selects how GPUs are reached.
type GPU struct {
	// Backend is "nvml" (the driver's libnvidia-ml) or "simulated".
	Backend   string    `toml:"backend"`
	Simulated Simulated `toml:"simulated"`
}

// Simulated describes the simulated GPUs used by tests, benchmarks and the
// demo. It is used only when GPU.Backend is "simulated".
type Simulated struct {
	// Count is the number of GPUs on the node.
	Count int `toml:"count"`
	// Model is one of a100, h100, h200, b200.
	Model string `toml:"model"`
	// Minors gives each GPU's device minor number in NVML index order;
	// empty means minor = index. A permutation shows that hooks map minors
	// rather than assume them.
	Minors []int `toml:"minors"`
	// MIG cuts GPUs into MIG slices, one entry per GPU in NVML index
	// order: "" a whole GPU, else its profiles ("1g.10gb,3g.40gb"): the
	// MIG node of the real-Slurm tests.
	MIG []string `toml:"mig"`
	// InitDelay makes nvmlInit slow, as it is without persistence mode.
	InitDelay Duration `toml:"init_delay"`
	// Hang makes every device call block, to test the time bounds.
	Hang bool `toml:"hang"`
	// Fail makes nvmlInit fail as if no driver were loaded.
	Fail bool `toml:"fail"`
	// ClockOffset shifts the node's clock, as the hooks and the agent
	// read it, by this much (negative: behind), as a server whose clock
	// is off would: the multi-node tests' skewed server.
	ClockOffset Duration `toml:"clock_offset"`
}

// maxClockOffset bounds gpu.simulated.clock_offset: a few seconds to a few
// minutes is what a node without NTP drifts; more is a typo.
const maxClockOffset = time.Hour

// Clock is the node's clock: time.Now, shifted by gpu.simulated.clock_offset
// when the backend is simulated.
func (g GPU) Clock() func() time.Time {
	off := g.Simulated.ClockOffset.Duration
	if g.Backend != "simulated" || off == 0 {
		return time.Now
	}
	return func() time.Time { return time.Now().Add(off) }
}

// Default returns the built-in configuration.
func Default() Config {
	return Config{
		Cluster: Cluster{Name: "cluster"},
		Spool:   Spool{Dir: "/var/spool/gpusuite"},
		Hooks: Hooks{
			Timeout:     Dur(2 * time.Second),
			NVMLTimeout: Dur(500 * time.Millisecond),
			LogLevel:    "info",
			Root:        "/",
		},
		GPU: GPU{
			Backend:   "nvml",
			Simulated: Simulated{Count: 4, Model: "h100"},
		},
		NFSSync:   defaultNFSSync(),
		Container: defaultContainer(),
		Store:     defaultStore(),
		Ingest:    defaultIngest(),
		Agent:     defaultAgent(),
		Report:    defaultReport(),
		Web:       defaultWeb(),
		Board:     defaultBoard(),
		Notify:    defaultNotify(),
		Budget:    defaultBudget(),
	}
}

// Path returns the configuration path to use: the flag value if given, else
// $GPUSUITE_CONFIG, else DefaultPath. explicit reports whether the user named
// it, in which case a missing file is an error.
func Path(flag string, getenv func(string) string) (path string, explicit bool) {
	if flag != "" {
		return flag, true
	}
	if p := getenv(EnvPath); p != "" {
		return p, true
	}
	return DefaultPath, false
}

// Load reads path over the defaults. A missing file is fine unless explicit.
// Errors name the file, and for bad content the line and the key.
func Load(path string, explicit bool) (Config, error) {
	data, err := ReadFile(path)
	return load(path, explicit, data, err)
}

// load is Load once the file is read (data) or not (err).
func load(path string, explicit bool, data []byte, err error) (Config, error) {
	cfg := Default()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if !explicit {
				return cfg, nil
			}
			return cfg, fmt.Errorf("read config %q (start from packaging/gpusuite.toml.example, or name another file with --config or %s): %w", path, EnvPath, err)
		}
		return cfg, fmt.Errorf("read config %q: %w", path, err)
	}
	if err := Parse(data, &cfg); err != nil {
		return Default(), fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// Parse decodes TOML data over cfg, refusing unknown keys and wrong types,
// then validates the result. A leading UTF-8 BOM is ignored.
func Parse(data []byte, cfg *Config) error {
	data = stripBOM(data)
	dec := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields()
	if err := dec.Decode(cfg); err != nil {
		return locate(data, describe(err))
	}
	if err := cfg.Validate(); err != nil {
		return withLine(data, err)
	}
	return nil
}

func describe(err error) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) && len(strict.Errors) > 0 {
		var parts []string
		for i := range strict.Errors {
			e := &strict.Errors[i]
			row, _ := e.Position()
			parts = append(parts, fmt.Sprintf("line %d: unknown key %q", row, strings.Join(e.Key(), ".")))
		}
		return fmt.Errorf("%s (see docs/configuration.md for the keys)", strings.Join(parts, "; "))
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		key := strings.Join(de.Key(), ".")
		if key != "" {
			return fmt.Errorf("line %d: key %q: %s", row, key, de.Error())
		}
		return fmt.Errorf("line %d: %s", row, de.Error())
	}
	return err
}

// locate names the key and line of a duration given as a bare number: the
// TOML decoder reports that error without a position.
func locate(data []byte, err error) error {
	var de *toml.DecodeError
	var strict *toml.StrictMissingError
	if errors.As(err, &de) || errors.As(err, &strict) {
		return err
	}
	var doc map[string]any
	if toml.Unmarshal(data, &doc) != nil {
		return err
	}
	key := findNonStringDuration(reflect.TypeOf(Config{}), doc, "")
	if key == "" {
		return err
	}
	if line := keyLine(data, key); line > 0 {
		return fmt.Errorf("line %d: key %q: %w (write it as a string, e.g. \"10s\")", line, key, err)
	}
	return fmt.Errorf("key %q: %w (write it as a string, e.g. \"10s\")", key, err)
}

func findNonStringDuration(t reflect.Type, doc map[string]any, prefix string) string {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		v, ok := doc[name]
		if name == "" || !ok {
			continue
		}
		switch {
		case f.Type == reflect.TypeOf(Duration{}):
			if _, isString := v.(string); !isString {
				return prefix + name
			}
		case f.Type.Kind() == reflect.Struct:
			if sub, ok := v.(map[string]any); ok {
				if k := findNonStringDuration(f.Type, sub, prefix+name+"."); k != "" {
					return k
				}
			}
		}
	}
	return ""
}

// Validate checks values that TOML types alone cannot.
func (c *Config) Validate() error {
	switch c.GPU.Backend {
	case "nvml", "simulated":
	default:
		return fmt.Errorf("key \"gpu.backend\": %q is not nvml or simulated", c.GPU.Backend)
	}
	if c.GPU.Simulated.Count < 0 || c.GPU.Simulated.Count > 64 {
		return fmt.Errorf("key \"gpu.simulated.count\": %d is outside 0..64", c.GPU.Simulated.Count)
	}
	if off := c.GPU.Simulated.ClockOffset.Duration; off > maxClockOffset || off < -maxClockOffset {
		return fmt.Errorf("key \"gpu.simulated.clock_offset\": %s is beyond ±%s", off, maxClockOffset)
	}
	if n := len(c.GPU.Simulated.Minors); n != 0 && n != c.GPU.Simulated.Count {
		return fmt.Errorf("key \"gpu.simulated.minors\": %d minors for %d GPUs", n, c.GPU.Simulated.Count)
	}
	if n := len(c.GPU.Simulated.MIG); n > c.GPU.Simulated.Count {
		return fmt.Errorf("key \"gpu.simulated.mig\": %d layouts for %d GPUs", n, c.GPU.Simulated.Count)
	}
	if err := hookDuration("hooks.timeout", c.Hooks.Timeout.Duration, MinHookTimeout); err != nil {
		return err
	}
	if err := hookDuration("hooks.nvml_timeout", c.Hooks.NVMLTimeout.Duration, time.Nanosecond); err != nil {
		return err
	}
	if err := hookDuration("gpu.simulated.init_delay", c.GPU.Simulated.InitDelay.Duration, 0); err != nil {
		return err
	}
	if err := checkLogLevel("hooks.log_level", c.Hooks.LogLevel); err != nil {
		return err
	}
	if c.Hooks.Root != "" && !filepath.IsAbs(c.Hooks.Root) {
		// relative to slurmd's directory: the MIG caps would not be found
		return fmt.Errorf("key \"hooks.root\": %q is not an absolute path", c.Hooks.Root)
	}
	if c.Spool.Dir == "" {
		return fmt.Errorf("key \"spool.dir\": must not be empty")
	}
	if !filepath.IsAbs(c.Spool.Dir) {
		// relative to whatever directory slurmd or systemd started in: the
		// hooks and the agent would not share one spool
		return fmt.Errorf("key \"spool.dir\": %q is not an absolute path", c.Spool.Dir)
	}
	for _, validate := range []func() error{c.NFSSync.validate, c.Agent.validate, c.Store.validate, c.Ingest.validate,
		c.Report.validate, c.Web.validate, c.Board.validate, c.Notify.validate, c.Container.validate, c.Budget.validate,
		c.Billing.validate} {
		if err := validate(); err != nil {
			return err
		}
	}
	return nil
}

// checkLogLevel refuses a log level that logging.ParseLevel would not read.
func checkLogLevel(key, level string) error {
	switch level {
	case "debug", "info", "warn", "error":
		return nil
	}
	return fmt.Errorf("key %q: %q is not debug, info, warn or error", key, level)
}

// Duration is a time.Duration written as a Go duration string ("2s"). It is
// a struct so that a bare TOML integer (nanoseconds? seconds?) is refused.
type Duration struct{ time.Duration }

// Dur makes a Duration.
func Dur(d time.Duration) Duration { return Duration{d} }

// UnmarshalText parses "1.5s", "500ms", ...
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration such as \"2s\" or \"500ms\"", string(b))
	}
	d.Duration = v
	return nil
}

// MarshalText writes the duration as a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }
