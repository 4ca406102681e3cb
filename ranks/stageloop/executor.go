package stageloop

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/tensor"
	"github.com/pplaunch/pplaunch/schedules"
)

// Stage is what the executor drives: *models.Stage, or a stand-in with
// a known cost per action (the runtime-overhead benchmark). The tensors
// Forward, Backward and BackwardInput return belong to the caller from then
// on: the stage keeps no reference to them, since the executor hands a sent
// one to a later receive to write into.
type Stage interface {
	IsFirst() bool
	IsLast() bool
	// ActShape is the shape of the stage's input activation for a
	// micro-batch of batch sequences, and of its output unless the stage
	// says otherwise (IOShaper).
	ActShape(batch int) []int
	BeginStep(first, count int) error
	Forward(mb int, in models.Input) (models.Output, error)
	Backward(mb int, gradOut *tensor.Tensor) (*tensor.Tensor, error)
	BackwardInput(mb int, gradOut *tensor.Tensor) (*tensor.Tensor, error)
	BackwardWeight(mb int) error
	FinishStep() error
	ActivationBytes() int64
	PeakActivationBytes() int64
	ResetPeak()
}

// IOShaper is implemented by stages whose input and output activations
// differ in shape; the executor then receives a stage's input in InShape and
// the gradient of its output in OutShape.
type IOShaper interface {
	InShape(batch int) []int
	OutShape(batch int) []int
}

// IOShape is the shape of stage st's input (in) or output.
func IOShape(st Stage, batch int, in bool) []int {
	if s, ok := st.(IOShaper); ok {
		if in {
			return s.InShape(batch)
		}
		return s.OutShape(batch)
	}
	return st.ActShape(batch)
}

// Batches gives the executor a micro-batch's tokens and targets by global
// micro-batch index (the first stage reads tokens, the last targets).
type Batches func(globalMicro int) (tokens, targets []int32, err error)

// Executor runs one pipeline rank's action list, step after step, with the
// real stages and communicator. It is the stage loop of DESIGN.md: receives
// are posted when the list reaches them (Lower places them ahead of the
// compute that needs them) into buffers reused from step to step, and waited
// for only by that compute; sends go out without blocking compute, and their
// tensors return to the buffer pool once done; gradients accumulate over the
// step's micro-batches in global micro-batch order (models.Accumulator).
// Transfers are issued in list order, which is the order the peer issues the
// matching ones, as backends that pair transfers by order (NCCL) require; a
// validated schedule therefore cannot deadlock here. On a backend whose
// tensors live in device memory (Memory.HostStaging) a send goes on the
// wire once its copy to pinned host memory is done, from a goroutine of its
// own (mover.go): the TCP communicator pairs transfers by tag, not by order.
// A DeviceComm (NCCL) gets device tensors as they are, in list order.
type Executor struct {
	Sched  *schedules.Schedule
	PRank  int           // this rank's pipeline rank (its list in Sched)
	Stages map[int]Stage // the virtual stages this rank holds, by stage index
	Comm   collective.Comm
	// DeviceComm, when set, moves the device tensors instead of Comm: a
	// communicator of device memory (collective.MovesDevice: NCCL) over the
	// same ranks (Job.DeviceComm). Comm then carries only host messages.
	DeviceComm collective.Comm
	// Peer maps a pipeline rank to its rank in Comm (the same data-parallel replica).
	Peer func(pipelineRank int) int
	// First is the global index of this replica's micro-batch 0 (replica·M).
	First     int
	MicroSize int // sequences per micro-batch
	// Timeout bounds every wait for a transfer (0: the communicator's default).
	Timeout time.Duration
	// OnLastBackward, if set, is called with a stage index right after that
	// stage's last backward of the step has run and FinishStep has summed its
	// gradients, so its data-parallel reduction can start while the rest of
	// the schedule runs.
	OnLastBackward func(stage int) error
	// Stall, when set, is called before each action; the test-only stall hook
	// uses it to hang a chosen rank at a chosen action.
	Stall func(step int, a schedules.Action)
	// Compute is the stages' backend (Job.Compute): receive buffers come
	// from it, and when its tensors live in device memory (its HostStaging
	// is not nil) transfers over Comm go through pinned host buffers
	// (mover.go). nil: host tensors.
	Compute tensor.Memory
	// Act is the dtype of the activations and gradients the stages pass
	// (models.StageOptions.Activations): what the receive buffers hold and
	// what travels, bfloat16 as two bytes an element.
	Act tensor.DType

	xf       Mover
	pool     *bufPool
	lastBack map[int]int // stage -> index in the list of its last B or W
	order    []int       // the keys of Stages, increasing
}

// StepResult is what one rank measured in one step.
type StepResult struct {
	Losses map[int]float64  // global micro-batch -> loss (last stage only)
	Spans  []schedules.Span // one per action, seconds since Start
	Start  time.Time        // when the step's first action began
	Peak   int64            // peak activation bytes held by the rank's stages together
	PerMB  map[int]int64    // stage -> activation bytes one micro-batch left after its forward
}

// ActionError is a failed or timed-out action, naming what the rank was doing.
// Its text leaves out the rank itself, which the launcher's rank prefix gives.
type ActionError struct {
	Rank   int // this rank in Comm
	Step   int
	Action schedules.Action
	Peer   int // rank in Comm on the other end, -1 for compute
	Micro  int // global micro-batch
	Err    error
}

func (e *ActionError) Error() string {
	if e.Peer >= 0 {
		return fmt.Sprintf("step %d: %s (global mb=%d) with rank %d: %v", e.Step, e.Action, e.Micro, e.Peer, e.Err)
	}
	return fmt.Sprintf("step %d: %s (global mb=%d): %v", e.Step, e.Action, e.Micro, e.Err)
}

func (e *ActionError) Unwrap() error { return e.Err }

// WaitContext is the one place a wait's deadline comes from: every wait of the
// stage loop and of the trainer gets timeout from the moment it starts, on
// the run clock, so time the rank spent stopped (Ctrl-Z) does not count.
func WaitContext(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout > 0 {
		return collective.RunTimeout(parent, timeout)
	}
	return context.WithCancel(parent)
}

func (x *Executor) init() {
	if x.pool != nil {
		return
	}
	x.lastBack = map[int]int{}
	x.order = slices.Sorted(maps.Keys(x.Stages))
	recvs := map[string]int{}
	for i, a := range x.Sched.Ranks[x.PRank] {
		switch a.Kind {
		case schedules.B, schedules.W:
			x.lastBack[a.Stage] = i
		case schedules.RecvF, schedules.RecvB:
			if st := x.Stages[a.Stage]; st != nil {
				recvs[shapeKey(IOShape(st, x.MicroSize, a.Kind == schedules.RecvF))]++
			}
		}
	}
	x.pool = newBufPool(recvs, x.Compute, x.Act)
	x.xf = NewMover(x.Comm, x.DeviceComm, x.Compute)
}

// Step runs the rank's action list once for training step step. After an
// error the Executor must not be used again: transfers may still be pending
// on its buffers until the caller aborts the communicator.
func (x *Executor) Step(parent context.Context, step int, batches Batches) (*StepResult, error) {
	x.init()
	for _, s := range x.order {
		st := x.Stages[s]
		if err := st.BeginStep(x.First, x.Sched.M); err != nil {
			return nil, fmt.Errorf("step %d: stage %d: %w", step, s, err)
		}
		st.ResetPeak()
	}
	r := newStepRun(x, parent, step, batches)
	for i, a := range x.Sched.Ranks[x.PRank] {
		if err := r.run(i, a); err != nil {
			return nil, err
		}
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	return r.res, nil
}

// Mover is how x moves tensors (the communicator and backend it was given),
// for the rank's other transfers: the tied embedding's exchange, the
// data-parallel reduction, validation's activations.
func (x *Executor) Mover() Mover {
	x.init()
	return x.xf
}
