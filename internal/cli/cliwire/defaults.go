package cliwire

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/config"
)

// keyInUsage finds the configuration key a flag's usage names: the house
// convention is "(section.key)" or "(section.key; more words)".
var keyInUsage = regexp.MustCompile(`\(([a-z_]+\.[a-z_]+)[;)]`)

// UsageKey is the configuration key a flag's usage names ("" for none).
func UsageKey(usage string) string {
	m := keyInUsage.FindStringSubmatch(usage)
	if m == nil {
		return ""
	}
	return m[1]
}

// ConfigDefaults makes --help print, for every flag of app and of its
// commands whose usage names a configuration key, that key's built-in
// default (internal/config's Default): the flag itself has no value of its
// own, because an unset flag leaves the file's value (flag > env > file >
// default). A flag that sets DefaultText keeps it; a key whose default is
// empty prints none.
func ConfigDefaults(app *cli.App) {
	defaults := ConfigDefaultTexts()
	fill := func(flags []cli.Flag) {
		for _, f := range flags {
			df, ok := f.(cli.DocGenerationFlag)
			if !ok {
				continue
			}
			text, ok := defaults[UsageKey(df.GetUsage())]
			if !ok {
				continue
			}
			setDefaultText(f, text)
		}
	}
	fill(app.Flags)
	var walk func([]*cli.Command)
	walk = func(cmds []*cli.Command) {
		for _, c := range cmds {
			fill(c.Flags)
			walk(c.Subcommands)
		}
	}
	walk(app.Commands)
}

// setDefaultText sets f's DefaultText when f has the field and leaves it
// empty: every urfave flag type has one, of type string.
func setDefaultText(f cli.Flag, text string) {
	v := reflect.ValueOf(f)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return
	}
	field := v.Elem().FieldByName("DefaultText")
	if !field.IsValid() || field.Kind() != reflect.String || !field.CanSet() || field.String() != "" {
		return
	}
	field.SetString(text)
}

// ConfigDefaultTexts is every configuration key ("agent.interval") with
// its built-in default as --help prints it: durations as Go writes them
// ("1m0s"), lists comma-separated, "" for an empty value.
func ConfigDefaultTexts() map[string]string {
	out := map[string]string{}
	walkConfig(reflect.ValueOf(config.Default()), "", out)
	return out
}

func walkConfig(v reflect.Value, prefix string, out map[string]string) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		fv := v.Field(i)
		if fv.Kind() == reflect.Struct && fv.Type() != reflect.TypeOf(config.Duration{}) {
			// A section's own key names it too (board.slurm, say), but
			// flags name leaves.
			walkConfig(fv, prefix+name+".", out)
			continue
		}
		out[prefix+name] = defaultText(fv)
	}
}

func defaultText(v reflect.Value) string {
	if d, ok := v.Interface().(config.Duration); ok {
		return d.String()
	}
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Slice:
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = defaultText(v.Index(i))
		}
		return strings.Join(parts, ",")
	case reflect.Pointer:
		if v.IsNil() {
			return ""
		}
		return defaultText(v.Elem())
	}
	return fmt.Sprint(v.Interface())
}
