package main

import (
	"fmt"
	"os/exec"
	"reflect"
	"strings"

	"github.com/pplaunch/pplaunch/internal/usage"
	"github.com/pplaunch/pplaunch/launch"
)

// A usage error is one line that says what was wrong and how to fix it
// (package usage): pplaunch's command line is the cli struct, with the
// launcher's flags beside every command.
var pplaunchLine = usage.Line{
	Program:   "pplaunch",
	Root:      reflect.TypeFor[cli](),
	Common:    []reflect.Type{reflect.TypeFor[launch.Flags]()},
	Kinds:     map[reflect.Type]string{reflect.TypeFor[launch.Duration](): "seconds or a duration (30s, 5m)"},
	IsProgram: looksLikeProgram,
	Values: func(flag, value string) (string, bool) {
		if flag == "--nnodes" && strings.Contains(value, ":") {
			return fmt.Sprintf("--nnodes %s: elastic ranges (MIN:MAX) are not supported yet: give the number of nodes", value), true
		}
		return "", false
	},
}

// explainUsage turns go-arg's error for argv into one line (usage.Line.Explain).
func explainUsage(err error, argv, names []string, cmd any) string {
	return pplaunchLine.Explain(err, argv, names, cmd)
}

// looksLikeProgram says whether word is a path or a program on PATH.
func looksLikeProgram(word string) bool {
	if strings.ContainsAny(word, "/.") {
		return true
	}
	_, err := exec.LookPath(word)
	return err == nil
}
