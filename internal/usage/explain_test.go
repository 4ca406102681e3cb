package usage

import (
	"reflect"
	"strings"
	"testing"

	"github.com/alexflint/go-arg"
)

// count stands for a caller's own flag type with a kind of its own.
type count int

type common struct {
	NProc  int `arg:"--nproc"`
	NNodes int `arg:"--nnodes"`
}

type source struct {
	From string `arg:"--from,required" placeholder:"CKPT" help:"the checkpoint to read"`
}

type trainSub struct {
	Microbatches int     `arg:"--microbatches"`
	LR           float64 `arg:"--lr"`
	Steps        int     `arg:"--steps"`
	Ranks        count   `arg:"--ranks"`
}

type sampleSub struct {
	source
	Tokens int `arg:"--tokens"`
}

type stepSub struct{}

type benchSub struct {
	Step *stepSub `arg:"subcommand:step" help:"time one step"`
}

type root struct {
	common
	Train  *trainSub  `arg:"subcommand:train" help:"train a model"`
	Sample *sampleSub `arg:"subcommand:sample" help:"text from a checkpoint"`
	Bench  *benchSub  `arg:"subcommand:bench" help:"benchmarks"`
}

var line = Line{
	Program:   "prog",
	Root:      reflect.TypeFor[root](),
	Common:    []reflect.Type{reflect.TypeFor[common]()},
	Kinds:     map[reflect.Type]string{reflect.TypeFor[count](): "a count of ranks"},
	IsProgram: func(w string) bool { return w == "python3" || strings.Contains(w, "/") },
	Values: func(flag, value string) (string, bool) {
		if flag == "--nnodes" && value == "x" {
			return "--nnodes x: its own rule", true
		}
		return "", false
	},
}

// explain parses argv as go-arg does and explains its error.
func explain(t *testing.T, argv ...string) string {
	t.Helper()
	var r root
	p, err := arg.NewParser(arg.Config{Program: "prog"}, &r)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Parse(argv)
	if err == nil {
		t.Fatalf("%q parsed", argv)
	}
	return line.Explain(err, argv, p.SubcommandNames(), p.Subcommand())
}

func TestExplain(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"trian"}, "unknown command trian: did you mean train? (prog --help lists them)"},
		{[]string{"bench", "stpe"}, "unknown command stpe: did you mean step? (prog bench --help lists them)"},
		{[]string{"bench", "zzzzzz"}, "unknown command zzzzzz: the commands are step (prog bench --help lists them)"},
		{[]string{"--nproc", "2", "python3", "x.py"}, "python3 is not a prog command: to run a program on every rank, put -- before it: prog --nproc 2 -- python3 x.py"},
		{[]string{"--bogus"}, "unknown flag --bogus (prog --help lists the flags)"},
		{[]string{"--nprco", "2"}, "unknown flag --nprco: did you mean --nproc? (prog --help lists the flags)"},
		{[]string{"train", "--micro-batches", "8"}, "unknown flag --micro-batches: did you mean --microbatches? (prog train --help lists the flags)"},
		{[]string{"train", "--lr", "abc"}, "--lr abc: want a number"},
		{[]string{"train", "--steps=1.5"}, "--steps 1.5: want a whole number"},
		{[]string{"train", "--ranks", "two"}, "--ranks two: want a count of ranks"},
		{[]string{"sample"}, "--from CKPT is required: the checkpoint to read"},
		{[]string{"--nnodes", "x", "train"}, "--nnodes x: its own rule"},
	} {
		if got := explain(t, c.argv...); got != c.want {
			t.Errorf("%q:\n got %s\nwant %s", c.argv, got, c.want)
		}
	}
}

func TestCommandList(t *testing.T) {
	want := "  train        train a model\n  sample       text from a checkpoint\n  bench        benchmarks\n"
	if got := CommandList(reflect.TypeFor[*root]()); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := Subcommands(reflect.TypeFor[trainSub]()); len(got) != 0 {
		t.Errorf("a command without subcommands: %v", got)
	}
}
