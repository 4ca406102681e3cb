package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/runconfig"
)

// optionsTable is docs/training.md's table of train's options, made from the
// option table: each flag, its default, its DeepSpeed key and its help.
func optionsTable() string {
	var b strings.Builder
	b.WriteString("| flag | default | DeepSpeed key | |\n|---|---|---|---|\n")
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	code := func(s string) string {
		if s == "" {
			return ""
		}
		return "`" + s + "`"
	}
	var defaults trainCmd
	for _, o := range append([]runconfig.Option{{Flag: "--config", Help: configHelp()}}, trainOptions(&defaults)...) {
		help := o.Help
		if o.Env != "" {
			help += " [env: " + o.Env + "]"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", o.Flag, code(o.Def), code(o.DS), cell(help))
	}
	return b.String()
}

func configHelp() string {
	f, _ := reflect.TypeFor[trainCmd]().FieldByName("Config")
	return f.Tag.Get("help")
}

const (
	optionsBegin = "<!-- train options: made by TestTrainingDocsOptions from the option table (go test ./cmd/pplaunch -run TestTrainingDocsOptions -update) -->\n"
	optionsEnd   = "<!-- end of train options -->\n"
)

// TestTrainingDocsOptions: docs/training.md's option table is the option
// table's, so every flag, default and DeepSpeed key there is the code's.
func TestTrainingDocsOptions(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "training.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, optionsBegin), strings.Index(doc, optionsEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no option table between %q and %q", path, optionsBegin, optionsEnd)
	}
	want := optionsTable()
	if got := doc[i+len(optionsBegin) : j]; got != want {
		if *updatePlan {
			if err := os.WriteFile(path, []byte(doc[:i+len(optionsBegin)]+want+doc[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("%s's option table is not the code's (rerun with -update):\n%s", path, want)
	}
}
