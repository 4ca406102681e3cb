package main

import (
	"fmt"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/pplaunch/pplaunch/launch"
	"github.com/pplaunch/pplaunch/runconfig"
)

// A usage error is one line that says what was wrong and how to fix it: the
// nearest command or flag for a typo, what a flag's value must be, and where
// the full help is (pplaunch ... --help), instead of the whole usage.

// command is one subcommand a command struct declares.
type command struct{ name, help string }

// subcommands are the subcommands of the command struct t (go-arg's
// subcommand tags), in declaration order.
func subcommands(t reflect.Type) []command {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []command
	for i := range t.NumField() {
		f := t.Field(i)
		if name, ok := strings.CutPrefix(f.Tag.Get("arg"), "subcommand:"); ok {
			out = append(out, command{name, f.Tag.Get("help")})
		}
	}
	return out
}

// commandList is the subcommands of t, one line each.
func commandList(t reflect.Type) string {
	var b strings.Builder
	for _, c := range subcommands(t) {
		fmt.Fprintf(&b, "  %-12s %s\n", c.name, c.help)
	}
	return b.String()
}

// longFlags maps the long flags of the command struct t (its embedded
// structs included, its subcommands not) to their fields' types.
func longFlags(t reflect.Type, out map[string]reflect.Type) map[string]reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
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

// byPlaceholder finds the flag of t whose value is named ph (go-arg names
// a missing required flag by it).
func byPlaceholder(t reflect.Type, ph string) (struct{ flag, help string }, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Tag.Get("placeholder") == ph {
			flag, _, _ := strings.Cut(f.Tag.Get("arg"), ",")
			return struct{ flag, help string }{flag, f.Tag.Get("help")}, true
		}
	}
	return struct{ flag, help string }{}, false
}

// valueKind says what a flag of type t takes.
func valueKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[launch.Duration]() {
		return "seconds or a duration (30s, 5m)"
	}
	return runconfig.KindName(t)
}

var parsingValue = regexp.MustCompile(`parsing "(.*)"`)

// explainUsage turns go-arg's error for argv (the command line as parsed)
// into one line. names is the command path parsed so far (p.SubcommandNames),
// cmd the deepest command struct reached (p.Subcommand, nil at the top).
func explainUsage(err error, argv, names []string, cmd any) string {
	msg := err.Error()
	path := strings.TrimSpace("pplaunch " + strings.Join(names, " "))
	help := fmt.Sprintf("(%s --help lists them)", path)
	var t reflect.Type = reflect.TypeFor[cli]()
	if cmd != nil {
		t = reflect.TypeOf(cmd)
	}
	flags := longFlags(reflect.TypeFor[launch.Flags](), longFlags(t, map[string]reflect.Type{}))
	switch {
	case strings.HasPrefix(msg, "invalid subcommand: "):
		word := strings.TrimPrefix(msg, "invalid subcommand: ")
		var names []string
		for _, c := range subcommands(t) {
			names = append(names, c.name)
		}
		if near := runconfig.Nearest(word, names); near != "" && runconfig.EditDistance(word, near) <= max(2, len(word)/3) {
			return fmt.Sprintf("unknown command %s: did you mean %s? %s", word, near, help)
		}
		if cmd == nil && looksLikeProgram(word) {
			return fmt.Sprintf("%s is not a pplaunch command: to run a program on every rank, put -- before it: %s", word, withDashes(argv, word))
		}
		return fmt.Sprintf("unknown command %s: the commands are %s %s", word, strings.Join(names, ", "), help)
	case strings.HasPrefix(msg, "unknown argument "):
		flag, _, _ := strings.Cut(strings.TrimPrefix(msg, "unknown argument "), "=")
		var names []string
		for f := range flags {
			names = append(names, f)
		}
		if near := runconfig.Nearest(flag, slices.Sorted(slices.Values(names))); near != "" && runconfig.EditDistance(flag, near) <= max(2, len(flag)/3) {
			return fmt.Sprintf("unknown flag %s: did you mean %s? (%s --help lists the flags)", flag, near, path)
		}
		return fmt.Sprintf("unknown flag %s (%s --help lists the flags)", flag, path)
	case strings.HasSuffix(msg, " is required"):
		ph := strings.TrimSuffix(msg, " is required")
		if f, ok := byPlaceholder(t, ph); ok {
			return fmt.Sprintf("%s %s is required: %s", f.flag, ph, f.help)
		}
	case strings.HasPrefix(msg, "error processing --"):
		flag, _, _ := strings.Cut(strings.TrimPrefix(msg, "error processing "), ":")
		flag, value, hasValue := strings.Cut(flag, "=")
		if m := parsingValue.FindStringSubmatch(msg); m != nil && !hasValue {
			value = m[1]
		}
		if flag == "--nnodes" && strings.Contains(value, ":") {
			return fmt.Sprintf("--nnodes %s: elastic ranges (MIN:MAX) are not supported yet: give the number of nodes", value)
		}
		_, inner, _ := strings.Cut(msg, ": ")
		if ft, ok := flags[flag]; ok && strings.Contains(inner, "strconv.") {
			return fmt.Sprintf("%s %s: want %s", flag, value, valueKind(ft))
		}
		return flag + ": " + inner // the flag type's own message
	}
	return msg + " " + strings.Replace(help, "them", "the flags", 1)
}

// looksLikeProgram says whether word is a path or a program on PATH.
func looksLikeProgram(word string) bool {
	if strings.ContainsAny(word, "/.") {
		return true
	}
	_, err := exec.LookPath(word)
	return err == nil
}

// withDashes is argv as a command line with -- before program.
func withDashes(argv []string, program string) string {
	out := []string{"pplaunch"}
	for i, a := range argv {
		if a == program {
			out = append(out, "--")
			out = append(out, argv[i:]...)
			break
		}
		out = append(out, a)
	}
	return strings.Join(out, " ")
}
