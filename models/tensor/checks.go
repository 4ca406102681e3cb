package tensor

// The argument checks every backend shares. Each op family's own checks are
// in <family>_check.go, called by both cpu_<family>.go and cuda_<family>.go
// before any work, so the two backends refuse the same operands with the
// same message: the operation, the operand, its shape and what was wanted.

import (
	"fmt"
	"slices"
)

// mustShape panics unless t has exactly the shape.
func mustShape(op string, t *Tensor, shape ...int) {
	if len(t.Shape) != len(shape) {
		panic(fmt.Sprintf("%s: shape %v, want %v", op, t.Shape, shape))
	}
	for i := range shape {
		if t.Shape[i] != shape[i] {
			panic(fmt.Sprintf("%s: shape %v, want %v", op, t.Shape, shape))
		}
	}
}

// matDims checks that t is a matrix and returns its dimensions.
func matDims(op, what string, t *Tensor) (rows, cols int) {
	if len(t.Shape) != 2 {
		panic(fmt.Sprintf("%s: %s has shape %v, want a matrix", op, what, t.Shape))
	}
	return t.Shape[0], t.Shape[1]
}

// operand is a tensor named for the messages of a check.
type operand struct {
	name string
	t    *Tensor
}

// mustLens panics unless every operand holds n elements, naming the first
// that does not.
func mustLens(op string, n int, ops ...operand) {
	for _, o := range ops {
		mustLen(op, o.name, o.t, n)
	}
}

// mustLen panics unless t holds n elements.
func mustLen(op, what string, t *Tensor, n int) {
	if t.Len() != n {
		panic(fmt.Sprintf("%s: %s has %d elements %v, want %d", op, what, t.Len(), t.Shape, n))
	}
}

// checkIDs panics unless every id is within a vocabulary of V.
func checkIDs(op, what string, ids []int32, V int) {
	if i := slices.IndexFunc(ids, func(t int32) bool { return t < 0 || int(t) >= V }); i >= 0 {
		panic(fmt.Sprintf("%s: %s %d at %d outside vocabulary of %d", op, what, ids[i], i, V))
	}
}
