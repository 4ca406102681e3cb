package models

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/pplaunch/pplaunch/models/tensor"
)

// Param is one named parameter held by a stage, with its gradient buffer.
type Param struct {
	ParamSpec
	Value *tensor.Tensor
	// Grad is the gradient summed over the step's micro-batches (valid after
	// Stage.FinishStep); the executor may all-reduce or scale it in place before
	// the optimizer step.
	Grad *tensor.Tensor
	off  int            // offset in the stage's flat gradient layout
	be   tensor.Backend // the backend holding Value and Grad; nil: host tensors
}

// Offset is where the parameter starts in its stage's flat layout (of
// GradTensor and ValueTensor).
func (p *Param) Offset() int { return p.off }

// GradSumSquares is Σ grad² in float64 (in the backend's fixed order; index
// order on the CPU), for a global gradient norm that the caller combines
// across stages and replicas in name order.
func (p *Param) GradSumSquares() float64 { return p.backend().SumSquares(p.Grad) }

// backend is the backend that holds the parameter's tensors: the stage's, or
// for a parameter built by hand from host tensors, the host backend.
func (p *Param) backend() tensor.Backend {
	if p.be != nil {
		return p.be
	}
	return hostBackend()
}

// hostBackend computes on host tensors that no stage owns. Only its
// elementwise operations are used, which do not depend on the BLAS.
var hostBackend = sync.OnceValue(func() tensor.Backend {
	be, err := tensor.NewCPU("gonum")
	if err != nil {
		panic(err) // gonum is pure Go and always there
	}
	return be
})

// InitStd is the standard deviation a weight starts from, following GPT-2 /
// nanoGPT: 0.02 for matrices and embeddings, 0.02/√(2·layers) for the
// projections that feed the residual stream; biases start at 0 and LayerNorm
// gains at 1 (std 0 then).
func InitStd(cfg Config, name string) float64 {
	switch {
	case strings.HasSuffix(name, ".bias"):
		return 0
	case strings.Contains(name, "ln"):
		return 0
	case strings.HasSuffix(name, "c_proj.weight") || strings.HasSuffix(name, ".proj.weight"):
		return 0.02 / math.Sqrt(2*float64(cfg.Layers))
	}
	return 0.02
}

// InitValues returns a parameter's initial values: a function of the seed and
// the parameter's name only, never of which stage or rank holds it. A tied
// copy starts from the values of the parameter it copies.
func InitValues(cfg Config, seed uint64, spec ParamSpec) []float32 {
	name := spec.Name
	if spec.TiedTo != "" {
		name = spec.TiedTo
	}
	v := make([]float32, spec.Numel())
	std := InitStd(cfg, name)
	if std == 0 {
		if strings.Contains(name, "ln") && strings.HasSuffix(name, ".weight") {
			for i := range v {
				v[i] = 1
			}
		}
		return v
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	r := rand.New(rand.NewPCG(seed, h.Sum64()))
	for i := range v {
		v[i] = float32(r.NormFloat64() * std)
	}
	return v
}
