package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// Bounds of the durations on the hooks' path. The job waits for the prolog,
// and slurmd drains a node whose prolog outlives PrologEpilogTimeout (60s in
// packaging/slurm/slurm.conf.snippet), so a typo such as "100000h" must be
// refused, not obeyed.
const (
	// MinHookTimeout is the least hooks.timeout: below it not even the
	// spool write fits.
	MinHookTimeout = 100 * time.Millisecond
	// MaxHookDuration bounds hooks.timeout, hooks.nvml_timeout,
	// agent.socket_timeout and gpu.simulated.init_delay.
	MaxHookDuration = 30 * time.Second
	// HookReadBound is how long a hook waits for its config file: a quarter
	// of the default hooks.timeout, so a hung mount leaves most of the run.
	HookReadBound = 500 * time.Millisecond
)

// hookDuration checks a duration the hooks wait on: at least least (0 allows
// zero; one nanosecond means "positive") and at most MaxHookDuration.
func hookDuration(key string, v, least time.Duration) error {
	switch {
	case v < least && least == time.Nanosecond:
		return fmt.Errorf("key %q: must be positive", key)
	case v < least && least == 0:
		return fmt.Errorf("key %q: %s is negative", key, v)
	case v < least:
		return fmt.Errorf("key %q: %s is below the %s minimum", key, v, least)
	case v > MaxHookDuration:
		return fmt.Errorf("key %q: %s is above the %s maximum (the job waits for the hooks; keep slurm.conf's PrologEpilogTimeout above it)", key, v, MaxHookDuration)
	}
	return nil
}

// hookKeys are the keys a hook still takes from a file that fails to load,
// in the order they are tried: where to write (spool.dir, agent.socket),
// what to call the record (cluster), how to reach the GPUs and how long to
// wait. hooks.health_check is not among them: a broken file must not start
// draining nodes.
var hookKeys = []string{
	"spool.dir", "cluster.name", "cluster.node", "agent.socket",
	"hooks.timeout", "hooks.nvml_timeout", "hooks.log_level", "agent.socket_timeout",
	"gpu.backend", "gpu.simulated.count", "gpu.simulated.model", "gpu.simulated.minors",
	"gpu.simulated.init_delay", "gpu.simulated.hang", "gpu.simulated.fail", "gpu.simulated.clock_offset",
}

// LoadHook is Load for prolog and epilog. The file gets at most within to
// answer (a FIFO or a hung mount must not hold the job), and when it fails
// to load, the hook keys that still parse and validate on their own are
// taken from it over the defaults, so that the hook writes its event where
// the agent will look. salvaged lists those keys; err is the load error.
func LoadHook(path string, explicit bool, within time.Duration) (cfg Config, salvaged []string, err error) {
	return loadHook(path, explicit, within, ReadFile)
}

func loadHook(path string, explicit bool, within time.Duration, read func(string) ([]byte, error)) (Config, []string, error) {
	type loaded struct {
		cfg      Config
		salvaged []string
		err      error
	}
	ch := make(chan loaded, 1)
	go func() {
		data, rerr := read(path)
		cfg, err := load(path, explicit, data, rerr)
		var salvaged []string
		if err != nil && rerr == nil {
			cfg, salvaged = salvage(data)
		}
		ch <- loaded{cfg, salvaged, err}
	}()
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case l := <-ch:
		return l.cfg, l.salvaged, l.err
	case <-timer.C:
		return Default(), nil, fmt.Errorf("read config %q: no answer within %s (a hung mount?); nothing taken from it", path, within)
	}
}

// salvage takes the hook keys that are valid on their own from a file that
// failed to load: from the whole document when it is valid TOML (an unknown
// key or a bad value elsewhere), else line by line (a syntax error).
func salvage(data []byte) (Config, []string) {
	data = stripBOM(data)
	found := map[string]any{}
	var doc map[string]any
	if toml.Unmarshal(data, &doc) == nil {
		flatten("", doc, found)
	} else {
		salvageLines(data, found)
	}
	cfg := Default()
	accepted := map[string]any{}
	var keys []string
	for _, k := range hookKeys {
		v, ok := found[k]
		if !ok {
			continue
		}
		accepted[k] = v
		c, err := fromFlat(accepted)
		if err != nil {
			delete(accepted, k)
			continue
		}
		cfg, keys = c, append(keys, k)
	}
	return cfg, keys
}

// salvageLines reads a document that is not valid TOML one line at a time,
// keeping the table headers, so a broken line costs only itself.
func salvageLines(data []byte, found map[string]any) {
	const noTable = "\x00"
	table := ""
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		var doc map[string]any
		err := toml.Unmarshal([]byte(line), &doc)
		if line[0] == '[' {
			table = noTable // what follows a broken or array table header belongs to no hook key
			if err == nil {
				table = headerPath(doc)
			}
			continue
		}
		if err != nil || table == noTable {
			continue
		}
		prefix := ""
		if table != "" {
			prefix = table + "."
		}
		flatten(prefix, doc, found)
	}
}

// headerPath turns the decoded `[a.b]` into "a.b"; an array table has no
// path a hook key lives under.
func headerPath(doc map[string]any) string {
	var parts []string
	for len(doc) == 1 {
		for k, v := range doc {
			parts = append(parts, k)
			sub, ok := v.(map[string]any)
			if !ok {
				return "\x00"
			}
			doc = sub
		}
	}
	return strings.Join(parts, ".")
}

func flatten(prefix string, doc map[string]any, into map[string]any) {
	for k, v := range doc {
		if sub, ok := v.(map[string]any); ok {
			flatten(prefix+k+".", sub, into)
			continue
		}
		into[prefix+k] = v
	}
}

// fromFlat builds a document from dotted keys and loads it over the
// defaults with the full checks.
func fromFlat(flat map[string]any) (Config, error) {
	doc := map[string]any{}
	for k, v := range flat {
		parts := strings.Split(k, ".")
		m := doc
		for _, p := range parts[:len(parts)-1] {
			sub, ok := m[p].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[p] = sub
			}
			m = sub
		}
		m[parts[len(parts)-1]] = v
	}
	data, err := toml.Marshal(doc)
	if err != nil {
		return Config{}, err
	}
	cfg := Default()
	if err := Parse(data, &cfg); err != nil {
		return Config{}, err
	}
	return cfg, nil
}
