package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/alexflint/go-arg"
	"mvdan.cc/sh/v3/syntax"
)

// docCommand is one pplaunch command line found in the docs.
type docCommand struct {
	where string   // file:line
	args  []string // after "pplaunch"
	prose bool     // an inline code span, which may leave out what a command needs
}

// docCommands finds every pplaunch command in markdown text: in ```sh
// blocks (parsed as shell: continuations, comments, env assignments, srun
// in front), on the "$ " lines of other blocks, and in inline code spans
// that begin with "pplaunch ". A word the shell would expand ($N, $(...))
// stands for "1", a value every flag takes.
func docCommands(name, text string) ([]docCommand, error) {
	var out []docCommand
	lines := strings.Split(text, "\n")
	inBlock, lang, start := false, "", 0
	var block []string
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "```") && !inBlock:
			inBlock, lang, start, block = true, strings.TrimPrefix(l, "```"), i+1, nil
		case strings.HasPrefix(l, "```"):
			inBlock = false
			var script []string
			for _, b := range block {
				switch {
				case lang == "sh":
					script = append(script, b)
				case strings.HasPrefix(b, "$ "):
					script = append(script, strings.TrimPrefix(b, "$ "))
				default:
					script = append(script, "") // keep the line numbers
				}
			}
			cmds, err := shellCommands(fmt.Sprintf("%s:%d", name, start+1), strings.Join(script, "\n"))
			if err != nil {
				return nil, err
			}
			out = append(out, cmds...)
		case inBlock:
			block = append(block, l)
		default:
			for _, span := range inlineCommand.FindAllStringSubmatch(l, -1) {
				if strings.Contains(span[1], "...") {
					continue // an abbreviation
				}
				cmds, err := shellCommands(fmt.Sprintf("%s:%d", name, i+1), span[1])
				for _, c := range cmds {
					c.prose = true
					out = append(out, c)
				}
				_ = err // prose may abbreviate a command beyond what a shell reads
			}
		}
	}
	return out, nil
}

var inlineCommand = regexp.MustCompile("`(pplaunch [^`]*)`")

// shellCommands parses a script and returns its pplaunch calls; where is the
// file and line of the script's first line.
func shellCommands(where, script string) ([]docCommand, error) {
	f, err := syntax.NewParser().Parse(strings.NewReader(script), where)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	file, line0 := where, 0
	if i := strings.LastIndex(where, ":"); i > 0 {
		file = where[:i]
		fmt.Sscan(where[i+1:], &line0)
	}
	var out []docCommand
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok {
			return true
		}
		var words []string
		for _, w := range call.Args {
			if t := wordText(w.Parts); t != "" {
				words = append(words, t)
			}
		}
		for i, w := range words {
			if filepath.Base(w) == "pplaunch" {
				out = append(out, docCommand{where: fmt.Sprintf("%s:%d", file, line0+int(call.Pos().Line())-1), args: words[i+1:]})
				break
			}
		}
		return true
	})
	return out, nil
}

// wordText is a shell word's text, with "1" for each expansion in it.
func wordText(parts []syntax.WordPart) string {
	var b strings.Builder
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			b.WriteString(wordText(p.Parts))
		case *syntax.ParamExp:
			switch {
			case p.Param != nil && p.Param.Value == "@":
				// the script's own arguments: none here
			case p.Exp != nil && p.Exp.Word != nil:
				b.WriteString(wordText(p.Exp.Word.Parts)) // ${X:-default}
			default:
				b.WriteString("1")
			}
		default:
			b.WriteString("1")
		}
	}
	return b.String()
}

var placeholder = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// parseDocCommand parses args as pplaunch's command line: the launcher
// flags and subcommand before --, and for bench scaling the train flags
// after it.
func parseDocCommand(args []string) error {
	args = append([]string{}, args...)
	for i, a := range args {
		if placeholder.MatchString(a) {
			args[i] = "1" // DP, FILE, N: the docs' names for a value
		}
	}
	flagArgs, program, _ := splitProgram(args)
	var c cli
	p, err := arg.NewParser(arg.Config{Program: "pplaunch", IgnoreEnv: true}, &c)
	if err != nil {
		return err
	}
	if err := p.Parse(negativeValues(torchrunNames(flagArgs))); err != nil && !errors.Is(err, arg.ErrHelp) {
		return errors.New(explainUsage(err, flagArgs, p.SubcommandNames(), p.Subcommand()))
	}
	if c.Bench != nil && c.Bench.Scaling != nil && len(program) > 0 {
		_, err := parseTrainArgs(program)
		return err
	}
	return nil
}

// TestDocsCommands: every pplaunch command that README.md and docs/ show
// parses with the real flag parser, so no page names a flag or a command
// that does not exist.
func TestDocsCommands(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	files = append(files, filepath.Join("..", "..", "README.md"))
	scripts, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*", "*.sbatch"))
	seen := 0
	for _, path := range append(files, scripts...) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(filepath.Join("..", ".."), path)
		var cmds []docCommand
		if strings.HasSuffix(path, ".md") {
			cmds, err = docCommands(name, string(b))
		} else {
			cmds, err = shellCommands(name+":1", string(b))
		}
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		for _, c := range cmds {
			seen++
			t.Logf("%s: pplaunch %s", c.where, strings.Join(c.args, " "))
			err := parseDocCommand(c.args)
			if c.prose && err != nil && !strings.Contains(err.Error(), "unknown ") {
				continue // "pplaunch sample" in a sentence need not give --from
			}
			if err != nil {
				t.Errorf("%s: pplaunch %s: %v", c.where, strings.Join(c.args, " "), err)
			}
		}
	}
	if seen < 40 {
		t.Errorf("found %d pplaunch commands in the docs, want the 40 or more they hold", seen)
	}
}

// TestDocCommandsFindsMistakes: the finder sees commands in every form the
// docs use, and the parser refuses an unknown flag.
func TestDocCommandsFindsMistakes(t *testing.T) {
	text := "run `pplaunch train --stepz 3` then\n```sh\nPPLAUNCH_TOKEN=x srun -N2 pplaunch --nproc 4 \\\n  train --steps $N   # comment\n```\n```\n$ ./bin/pplaunch plan --stages 4\noutput\n```\n"
	cmds, err := docCommands("x.md", text)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cmds {
		got = append(got, c.where+" "+strings.Join(c.args, " "))
	}
	want := []string{"x.md:1 train --stepz 3", "x.md:3 --nproc 4 train --steps 1", "x.md:7 plan --stages 4"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("found %q, want %q", got, want)
	}
	if err := parseDocCommand(cmds[0].args); err == nil || !strings.Contains(err.Error(), "unknown flag --stepz: did you mean --steps?") {
		t.Errorf("train --stepz: %v", err)
	}
	for _, c := range cmds[1:] {
		if err := parseDocCommand(c.args); err != nil {
			t.Errorf("%s: %v", c.where, err)
		}
	}
}
