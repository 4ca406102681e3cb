package usage

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/pplaunch/pplaunch/runconfig"
)

// Line is a program's command line, as far as its usage errors need it.
type Line struct {
	Program   string                  // the program's name: "pplaunch"
	Root      reflect.Type            // the top command struct
	Common    []reflect.Type          // flag structs every command also takes (a launcher's)
	Kinds     map[reflect.Type]string // what a flag of one of the caller's own types takes
	IsProgram func(word string) bool  // whether a word names a program (a path, or one on PATH)
	// Explain names these flags' values' own rules before the generic
	// kind: a flag and value it returns a line for.
	Values func(flag, value string) (string, bool)
}

var parsingValue = regexp.MustCompile(`parsing "(.*)"`)

// Explain turns go-arg's error for argv (the command line as parsed) into
// one line. names is the command path parsed so far (p.SubcommandNames),
// cmd the deepest command struct reached (p.Subcommand, nil at the top).
func (l Line) Explain(err error, argv, names []string, cmd any) string {
	msg := err.Error()
	path := strings.TrimSpace(l.Program + " " + strings.Join(names, " "))
	help := fmt.Sprintf("(%s --help lists them)", path)
	t := l.Root
	if cmd != nil {
		t = reflect.TypeOf(cmd)
	}
	flags := longFlags(t, map[string]reflect.Type{})
	for _, c := range l.Common {
		longFlags(c, flags)
	}
	switch {
	case strings.HasPrefix(msg, "invalid subcommand: "):
		return l.unknownCommand(strings.TrimPrefix(msg, "invalid subcommand: "), t, cmd == nil, argv, help)
	case strings.HasPrefix(msg, "unknown argument "):
		flag, _, _ := strings.Cut(strings.TrimPrefix(msg, "unknown argument "), "=")
		var names []string
		for f := range flags {
			names = append(names, f)
		}
		if near := nearby(flag, slices.Sorted(slices.Values(names))); near != "" {
			return fmt.Sprintf("unknown flag %s: did you mean %s? (%s --help lists the flags)", flag, near, path)
		}
		return fmt.Sprintf("unknown flag %s (%s --help lists the flags)", flag, path)
	case strings.HasSuffix(msg, " is required"):
		ph := strings.TrimSuffix(msg, " is required")
		if f, ok := byPlaceholder(t, ph); ok {
			return fmt.Sprintf("%s %s is required: %s", f.flag, ph, f.help)
		}
	case strings.HasPrefix(msg, "error processing --"):
		return l.badValue(msg, flags)
	}
	return msg + " " + strings.Replace(help, "them", "the flags", 1)
}

// nearby is the name of names nearest word, where it is near enough to be
// what was meant ("" if none is).
func nearby(word string, names []string) string {
	if near := runconfig.Nearest(word, names); near != "" && runconfig.EditDistance(word, near) <= max(2, len(word)/3) {
		return near
	}
	return ""
}

// unknownCommand explains a word that names no subcommand of t: a typo's
// nearest command; at the top, a program run without -- before it; else
// the commands there are.
func (l Line) unknownCommand(word string, t reflect.Type, top bool, argv []string, help string) string {
	var names []string
	for _, c := range Subcommands(t) {
		names = append(names, c.Name)
	}
	if near := nearby(word, names); near != "" {
		return fmt.Sprintf("unknown command %s: did you mean %s? %s", word, near, help)
	}
	if top && l.IsProgram != nil && l.IsProgram(word) {
		return fmt.Sprintf("%s is not a %s command: to run a program on every rank, put -- before it: %s", word, l.Program, l.withDashes(argv, word))
	}
	return fmt.Sprintf("unknown command %s: the commands are %s %s", word, strings.Join(names, ", "), help)
}

// badValue explains a flag's value that does not parse: what the flag's
// kind wants, or the flag type's own message.
func (l Line) badValue(msg string, flags map[string]reflect.Type) string {
	flag, _, _ := strings.Cut(strings.TrimPrefix(msg, "error processing "), ":")
	flag, value, hasValue := strings.Cut(flag, "=")
	if m := parsingValue.FindStringSubmatch(msg); m != nil && !hasValue {
		value = m[1]
	}
	if l.Values != nil {
		if line, ok := l.Values(flag, value); ok {
			return line
		}
	}
	_, inner, _ := strings.Cut(msg, ": ")
	if ft, ok := flags[flag]; ok && strings.Contains(inner, "strconv.") {
		return fmt.Sprintf("%s %s: want %s", flag, value, l.kind(ft))
	}
	return flag + ": " + inner // the flag type's own message
}

// kind says what a flag of type t takes.
func (l Line) kind(t reflect.Type) string {
	t = elem(t)
	if k, ok := l.Kinds[t]; ok {
		return k
	}
	return runconfig.KindName(t)
}

// withDashes is argv as a command line with -- before program.
func (l Line) withDashes(argv []string, program string) string {
	out := []string{l.Program}
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
