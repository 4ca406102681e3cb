package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"syscall"
	"time"

	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/tensor"
)

// StepOptions configures a training-step benchmark: one process, one stage
// holding the whole model, one micro-batch of Batch sequences.
type StepOptions struct {
	Model   models.Config
	Batch   int
	Threads int    // GOMAXPROCS while timing; 0 keeps the current value
	Steps   int    // timed steps (the median is reported)
	Warmup  int    // untimed steps first
	BLAS    string // "auto", "openblas" or "gonum"
	Seed    uint64
	// Device is "cpu" (or "") or "cuda"; on CUDA the model runs on GPU GPU.
	Device string
	GPU    int
	// Precision is fp32 ("" too), tf32 (CUDA: TF32 products) or bf16
	// (bfloat16 activations, models.Precision).
	Precision models.Precision
}

// StepReport is the outcome. Times are medians over the timed steps.
type StepReport struct {
	Model        models.Config `json:"model"`
	Params       int64         `json:"params"`
	Backend      string        `json:"backend"`
	Precision    string        `json:"precision"`
	Batch        int           `json:"batch"`
	Threads      int           `json:"threads"`
	Steps        int           `json:"steps"`
	StepMS       float64       `json:"step_ms"`
	CPUMS        float64       `json:"cpu_ms"`
	ForwardMS    float64       `json:"forward_ms"`
	BackwardMS   float64       `json:"backward_ms"`
	OptimizerMS  float64       `json:"optimizer_ms"`
	TokensPerSec float64       `json:"tokens_per_s"`
	GFLOP        float64       `json:"gflop_per_step"`
	GFLOPPerSec  float64       `json:"gflop_per_s"`
	Loss         float64       `json:"last_loss"`
	// PeakActBytes is the most activation bytes the stage held in a step.
	PeakActBytes int64 `json:"peak_act_bytes"`
	// DevicePeakBytes is the most device memory held by tensors (CUDA only).
	DevicePeakBytes int64 `json:"device_peak_bytes,omitempty"`
}

// DeviceError is a compute device that cannot be opened: a missing library,
// driver or GPU, or an unknown device name. Nothing has run.
type DeviceError struct{ Err error }

func (e *DeviceError) Error() string { return e.Err.Error() }
func (e *DeviceError) Unwrap() error { return e.Err }

// stepBackend opens the backend o asks for; close releases it.
func stepBackend(o StepOptions) (be tensor.Backend, close func(), err error) {
	switch o.Device {
	case "", "cpu":
		c, err := tensor.NewCPU(o.BLAS)
		return c, func() {}, err
	case "cuda":
		c, err := tensor.NewCUDA(o.GPU, tensor.CUDAOptions{TF32: o.Precision == models.TF32})
		if err != nil {
			return nil, nil, &DeviceError{err}
		}
		return c, func() { _ = c.Close() }, nil
	}
	return nil, nil, &DeviceError{fmt.Errorf("device %q: want cpu or cuda", o.Device)}
}

// syncDevice waits for a device backend's queued work, so that the clock read
// after it counts that work.
func syncDevice(be tensor.Backend) error {
	return be.Sync()
}

// Step times forward, backward and an AdamW update of the whole model.
func Step(o StepOptions) (StepReport, error) {
	if err := o.Model.Validate(); err != nil {
		return StepReport{}, err
	}
	if o.Batch < 1 || o.Steps < 1 || o.Warmup < 0 || o.Threads < 0 {
		return StepReport{}, fmt.Errorf("bench step: batch %d, steps %d, warmup %d, threads %d: want batch and steps ≥ 1, warmup and threads ≥ 0", o.Batch, o.Steps, o.Warmup, o.Threads)
	}
	if o.Threads > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(o.Threads))
	}
	be, closeBackend, err := stepBackend(o)
	if err != nil {
		return StepReport{}, err
	}
	defer closeBackend()
	s, err := models.NewStage(o.Model, []int{o.Model.Layers}, 0, be, models.StageOptions{Seed: o.Seed, Activations: o.Precision.Activations()})
	if err != nil {
		return StepReport{}, err
	}
	r := rand.New(rand.NewPCG(o.Seed, 1))
	n := o.Batch * o.Model.Seq
	in := models.Input{Tokens: make([]int32, n), Targets: make([]int32, n)}
	for i := range n {
		in.Tokens[i], in.Targets[i] = int32(r.IntN(o.Model.Vocab)), int32(r.IntN(o.Model.Vocab))
	}
	opt := models.NewAdamW(0.1)
	var fwd, bwd, upd, total, cpu []float64
	var loss float64
	for i := range o.Warmup + o.Steps {
		c0 := cpuTime()
		t0 := time.Now()
		if err := s.BeginStep(0, 1); err != nil {
			return StepReport{}, err
		}
		out, err := s.Forward(0, in)
		if err != nil {
			return StepReport{}, err
		}
		t1 := time.Now()
		if _, err := s.Backward(0, nil); err != nil {
			return StepReport{}, err
		}
		if err := s.FinishStep(); err != nil {
			return StepReport{}, err
		}
		if err := syncDevice(be); err != nil {
			return StepReport{}, err
		}
		t2 := time.Now()
		if err := opt.Step(s.Params(), 1e-4, 1); err != nil {
			return StepReport{}, err
		}
		if err := syncDevice(be); err != nil {
			return StepReport{}, err
		}
		t3 := time.Now()
		c3 := cpuTime()
		loss = out.Loss
		if i >= o.Warmup {
			fwd = append(fwd, ms(t1.Sub(t0)))
			bwd = append(bwd, ms(t2.Sub(t1)))
			upd = append(upd, ms(t3.Sub(t2)))
			total = append(total, ms(t3.Sub(t0)))
			cpu = append(cpu, ms(c3-c0))
		}
	}
	rep := StepReport{Model: o.Model, Params: o.Model.NumParams(), Backend: be.Name(), Batch: o.Batch,
		Threads: runtime.GOMAXPROCS(0), Steps: o.Steps, StepMS: median(total), CPUMS: median(cpu), ForwardMS: median(fwd),
		BackwardMS: median(bwd), OptimizerMS: median(upd), GFLOP: o.Model.StepFLOPs(o.Batch) / 1e9, Loss: loss,
		Precision: o.Precision.String(), PeakActBytes: s.PeakActivationBytes()}
	if m, ok := be.DeviceMemory(); ok {
		rep.DevicePeakBytes = m.Peak
	}
	rep.TokensPerSec = float64(n) / (rep.StepMS / 1e3)
	rep.GFLOPPerSec = rep.GFLOP / (rep.StepMS / 1e3)
	return rep, nil
}

// cpuTime is the process's user and system CPU time. Beside wall time it shows
// when other processes competed for the cores during the run.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }

// WriteText prints the report as a small table.
func (r StepReport) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "model     %s (%d parameters)\nbackend   %s, %d threads, %s\nbatch     %d × %d tokens\n"+
		"step      %.1f ms (forward %.1f, backward %.1f, AdamW %.1f; median of %d); CPU time %.1f ms\n"+
		"tokens/s  %.0f\nGFLOP/s   %.1f (%.2f GFLOP per step, matrix products and attention)\npeak act  %.1f MiB\n",
		r.Model, r.Params, r.Backend, r.Threads, r.Precision, r.Batch, r.Model.Seq,
		r.StepMS, r.ForwardMS, r.BackwardMS, r.OptimizerMS, r.Steps, r.CPUMS, r.TokensPerSec, r.GFLOPPerSec, r.GFLOP,
		float64(r.PeakActBytes)/(1<<20))
	if err == nil && r.DevicePeakBytes > 0 {
		_, err = fmt.Fprintf(w, "device    %.1f MiB peak held by tensors\n", float64(r.DevicePeakBytes)/(1<<20))
	}
	return err
}

// WriteJSON prints the report as one JSON object.
func (r StepReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
