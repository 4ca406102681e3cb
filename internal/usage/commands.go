package usage

import (
	"fmt"
	"reflect"
	"strings"
)

// Command is one subcommand a command struct declares.
type Command struct{ Name, Help string }

// elem is t without its pointers.
func elem(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// Subcommands are the subcommands of the command struct t (go-arg's
// subcommand tags), in declaration order.
func Subcommands(t reflect.Type) []Command {
	t = elem(t)
	var out []Command
	for i := range t.NumField() {
		f := t.Field(i)
		if name, ok := strings.CutPrefix(f.Tag.Get("arg"), "subcommand:"); ok {
			out = append(out, Command{name, f.Tag.Get("help")})
		}
	}
	return out
}

// CommandList is the subcommands of t, one line each.
func CommandList(t reflect.Type) string {
	var b strings.Builder
	for _, c := range Subcommands(t) {
		fmt.Fprintf(&b, "  %-12s %s\n", c.Name, c.Help)
	}
	return b.String()
}

// longFlags maps the long flags of the command struct t (its embedded
// structs included, its subcommands not) to their fields' types.
func longFlags(t reflect.Type, out map[string]reflect.Type) map[string]reflect.Type {
	t = elem(t)
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			longFlags(f.Type, out)
			continue
		}
		for _, part := range strings.Split(f.Tag.Get("arg"), ",") {
			if strings.HasPrefix(part, "--") {
				out[part] = f.Type
			}
		}
	}
	return out
}

// flagHelp is a flag and its help.
type flagHelp struct{ flag, help string }

// byPlaceholder finds the flag of t (its embedded structs included) whose
// value is named ph (go-arg names a missing required flag by it).
func byPlaceholder(t reflect.Type, ph string) (flagHelp, bool) {
	t = elem(t)
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Tag.Get("placeholder") == ph {
			flag, _, _ := strings.Cut(f.Tag.Get("arg"), ",")
			return flagHelp{flag, f.Tag.Get("help")}, true
		}
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			if fh, ok := byPlaceholder(f.Type, ph); ok {
				return fh, true
			}
		}
	}
	return flagHelp{}, false
}
