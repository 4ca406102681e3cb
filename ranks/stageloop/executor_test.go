package stageloop

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/tensor"
	"github.com/pplaunch/pplaunch/schedules"
)

var update = flag.Bool("update", false, "rewrite the executor's golden logs (and the generated schedules) under testdata")

// generated are the schedules of testdata/gen_*.txt: every generator, small
// p and m. The files are the generators' output in the text form; the test
// checks they still are.
var generated = []struct {
	name    string
	p, m, v int
}{
	{"gpipe", 2, 3, 1}, {"1f1b", 3, 4, 1}, {"1f1b", 1, 2, 1}, {"interleaved", 2, 4, 2},
	{"zb-h1", 2, 3, 1}, {"zb-v", 2, 3, 2}, {"v-half", 2, 3, 2}, {"v-min", 3, 4, 2}, {"dualpipev", 2, 4, 2},
}

// TestExecutorGolden runs every schedule of testdata/*.txt through the real
// Executor, one goroutine rank per line over the in-memory communicator,
// with recording fake stages and a recording communicator, for one step.
// The log of every stage and communicator call per rank (and the rank's
// error, if any) must equal testdata/NAME.golden; -update rewrites them.
func TestExecutorGolden(t *testing.T) {
	for _, g := range generated {
		s, err := schedules.Generate(g.name, g.p, g.m, g.v)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", fmt.Sprintf("gen_%s_p%d_m%d.txt", g.name, g.p, g.m))
		text := fmt.Sprintf("# schedules.Generate(%q, %d, %d, %d)\n%s", g.name, g.p, g.m, g.v, schedules.Format(s))
		if *update {
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != text {
			t.Errorf("%s is not the generator's output (%v): rerun with -update", path, err)
		}
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(files) < len(generated)+3 {
		t.Fatalf("schedules in testdata: %v, %v", files, err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			sched, err := schedules.Parse(string(b))
			if err != nil {
				t.Fatal(err)
			}
			got := runRecorded(t, sched, 1)
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("log differs from %s (run with -update after checking the change):\n%s", golden, diffLines(string(want), got))
			}
		})
	}
}

// diffLines shows the first line where want and got differ, with context.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\nwant %q\ngot  %q", i+1, wl, gl)
		}
	}
	return ""
}

// recorded is one rank of a recorded run.
type recorded struct {
	log   []string
	exec  *Executor
	sent  map[*float32]int // first element of each sent tensor -> step
	reuse int              // receives into a tensor sent in an earlier step
}

func (r *recorded) logf(format string, a ...any) { r.log = append(r.log, fmt.Sprintf(format, a...)) }

// runRecorded runs steps steps of sched on its ranks and returns the log.
// A rank that fails aborts the world, as the agent would stop the job; the
// failing schedules are written so that the other ranks have done all they
// can by then, so that the log does not depend on timing.
func runRecorded(t *testing.T, sched *schedules.Schedule, steps int) string {
	t.Helper()
	recs := runRanks(t, sched, steps)
	var b strings.Builder
	for r, rec := range recs {
		fmt.Fprintf(&b, "== rank %d\n%s\n", r, strings.Join(rec.log, "\n"))
	}
	return b.String()
}

func runRanks(t *testing.T, sched *schedules.Schedule, steps int) []*recorded {
	t.Helper()
	comms, err := collective.NewMemoryWorld(sched.P, collective.Options{Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]*recorded, sched.P)
	var wg sync.WaitGroup
	for r := range sched.P {
		rec := &recorded{sent: map[*float32]int{}}
		recs[r] = rec
		stages := map[int]Stage{}
		for _, s := range sched.StagesOf(r) {
			stages[s] = &fakeStage{rec: rec, index: s, last: s == sched.Stages()-1}
		}
		rec.exec = &Executor{
			Sched: sched, PRank: r, Stages: stages, Comm: &recComm{Comm: comms[r], rec: rec},
			Peer: func(p int) int { return p }, MicroSize: 2, Timeout: 20 * time.Second,
			OnLastBackward: func(s int) error { rec.logf("OnLastBackward(stage %d)", s); return nil },
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			batches := func(g int) ([]int32, []int32, error) { return []int32{int32(g)}, []int32{int32(-g)}, nil }
			for step := range steps {
				rec.logf("step %d", step)
				if _, err := rec.exec.Step(context.Background(), step, batches); err != nil {
					rec.logf("error: %v", err)
					comms[r].Abort(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, c := range comms {
		c.Close()
	}
	return recs
}

// recComm logs every transfer the executor starts, and counts receives into
// tensors it sent in an earlier step.
type recComm struct {
	collective.Comm
	rec  *recorded
	step int
}

func tagText(t collective.Tag) string {
	kind := map[collective.Kind]string{collective.Activation: "act", collective.Gradient: "grad"}[t.Kind]
	if kind == "" {
		kind = fmt.Sprint(t.Kind)
	}
	return fmt.Sprintf("%s chunk %d step %d mb %d", kind, t.Chunk, t.Step, t.MicroBatch)
}

func (c *recComm) Isend(peer int, tag collective.Tag, buf collective.Buffer) *collective.Handle {
	d := buf.F32
	c.rec.logf("Isend to %d %s %v = %g", peer, tagText(tag), buf.Shape, d[0])
	c.rec.sent[&d[0]] = int(tag.Step)
	return c.Comm.Isend(peer, tag, buf)
}

func (c *recComm) Irecv(peer int, tag collective.Tag, buf collective.Buffer) *collective.Handle {
	d := buf.F32
	c.rec.logf("Irecv from %d %s %v", peer, tagText(tag), buf.Shape)
	if s, ok := c.rec.sent[&d[0]]; ok && s < int(tag.Step) {
		c.rec.reuse++
	}
	return c.Comm.Irecv(peer, tag, buf)
}

func (c *recComm) Batch(ops ...collective.Op) *collective.Handle {
	c.rec.logf("Batch of %d", len(ops))
	return c.Comm.Batch(ops...)
}

// fakeStage records its calls. Stage s takes input of shape [batch, s+3]
// and gives output [batch, s+4], filled with 1000·(s+1)+mb (gradients with
// the negative of the stage that computed them), so the log shows which
// stage's data each call got.
type fakeStage struct {
	rec   *recorded
	index int
	last  bool
	held  int64
}

func (f *fakeStage) IsFirst() bool              { return f.index == 0 }
func (f *fakeStage) IsLast() bool               { return f.last }
func (f *fakeStage) ActShape(batch int) []int   { return f.InShape(batch) }
func (f *fakeStage) InShape(batch int) []int    { return []int{batch, f.index + 3} }
func (f *fakeStage) OutShape(batch int) []int   { return []int{batch, f.index + 4} }
func (f *fakeStage) ActivationBytes() int64     { return f.held }
func (f *fakeStage) PeakActivationBytes() int64 { return f.held }
func (f *fakeStage) ResetPeak()                 {}

func (f *fakeStage) BeginStep(first, count int) error {
	f.rec.logf("stage %d: BeginStep(%d, %d)", f.index, first, count)
	return nil
}

func (f *fakeStage) FinishStep() error {
	f.rec.logf("stage %d: FinishStep", f.index)
	return nil
}

func filled(v float32, shape ...int) *tensor.Tensor {
	t := tensor.New(shape...)
	for i := range t.Data {
		t.Data[i] = v
	}
	return t
}

func (f *fakeStage) Forward(mb int, in models.Input) (models.Output, error) {
	what := ""
	switch {
	case in.Tokens != nil:
		what = fmt.Sprintf("tokens %d", in.Tokens[0])
	case in.Act != nil:
		what = fmt.Sprintf("act %v = %g", in.Act.Shape, in.Act.Data[0])
	}
	f.rec.logf("stage %d: F(mb %d) %s", f.index, mb, what)
	if (in.Tokens != nil) != f.IsFirst() || (in.Act != nil) == f.IsFirst() || (in.Targets != nil) != f.last {
		return models.Output{}, fmt.Errorf("stage %d: wrong inputs %+v", f.index, in)
	}
	f.held++
	if f.last {
		return models.Output{Loss: float64(mb)}, nil
	}
	return models.Output{Act: filled(float32(1000*(f.index+1)+mb), f.OutShape(2)...)}, nil
}

func (f *fakeStage) backward(kind string, mb int, gradOut *tensor.Tensor) (*tensor.Tensor, error) {
	what := "from the loss"
	if gradOut != nil {
		what = fmt.Sprintf("grad %v = %g", gradOut.Shape, gradOut.Data[0])
	}
	f.rec.logf("stage %d: %s(mb %d) %s", f.index, kind, mb, what)
	if (gradOut == nil) != f.last {
		return nil, fmt.Errorf("stage %d: output gradient %v on the last stage %v", f.index, gradOut != nil, f.last)
	}
	if f.IsFirst() {
		return nil, nil
	}
	return filled(-float32(1000*(f.index+1)+mb), f.InShape(2)...), nil
}

func (f *fakeStage) Backward(mb int, g *tensor.Tensor) (*tensor.Tensor, error) {
	f.held--
	return f.backward("B", mb, g)
}

func (f *fakeStage) BackwardInput(mb int, g *tensor.Tensor) (*tensor.Tensor, error) {
	return f.backward("I", mb, g)
}

func (f *fakeStage) BackwardWeight(mb int) error {
	f.held--
	f.rec.logf("stage %d: W(mb %d)", f.index, mb)
	return nil
}

// TestExecutorRecyclesSends: after the first step, receives go into
// tensors the rank sent before, and no step allocates a transfer buffer
// after the first.
func TestExecutorRecyclesSends(t *testing.T) {
	sched, err := schedules.Generate("1f1b", 3, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	one := runRanks(t, sched, 1)
	three := runRanks(t, sched, 3)
	for r := range sched.P {
		if err := lastError(three[r]); err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		if got, want := three[r].exec.pool.fresh, one[r].exec.pool.fresh; got != want {
			t.Errorf("rank %d: %d buffers allocated in 3 steps, %d in the first alone", r, got, want)
		}
		if three[r].reuse == 0 {
			t.Errorf("rank %d: no receive went into a tensor sent in an earlier step", r)
		}
	}
}

func lastError(r *recorded) error {
	if l := r.log[len(r.log)-1]; strings.HasPrefix(l, "error: ") {
		return errors.New(l)
	}
	return nil
}
