package checkpoint

import (
	"fmt"
	"math"
	"slices"
)

// Tolerance says when two values match: |a-b| <= ATol + RTol*|b|, as numpy.allclose
// (b is the second checkpoint's value). The zero Tolerance asks for exact equality.
// NaNs match NaNs and infinities match infinities of the same sign.
type Tolerance struct {
	RTol, ATol float64
}

// TensorDiff is how one tensor compares.
type TensorDiff struct {
	Name string
	// ShapeA and ShapeB are nil when the tensor is missing on that side.
	ShapeA, ShapeB []int
	// MaxAbs and MaxRel are the largest |a-b| and |a-b|/|b| over the elements (+Inf
	// where b is 0 and a is not, or where only one side is NaN).
	MaxAbs, MaxRel float64
	// Outside counts the elements outside the tolerance.
	Outside int
	// Problem says why the tensors cannot be compared element by element: missing on
	// one side, or different shapes. Empty otherwise.
	Problem string
}

// Match reports whether the tensor matches within the tolerance.
func (d TensorDiff) Match() bool { return d.Problem == "" && d.Outside == 0 }

// Report is the comparison of two sets of tensors, by name.
type Report struct {
	Diffs []TensorDiff
}

// Mismatches is the number of tensors that do not match.
func (r Report) Mismatches() int {
	n := 0
	for _, d := range r.Diffs {
		if !d.Match() {
			n++
		}
	}
	return n
}

// OK reports whether every tensor matches.
func (r Report) OK() bool { return r.Mismatches() == 0 }

// Compare matches tensors a against b by name (the union of both), element by element.
func Compare(a, b []Tensor, tol Tolerance) Report {
	am, bm := map[string]Tensor{}, map[string]Tensor{}
	var names []string
	for _, t := range a {
		am[t.Name] = t
		names = append(names, t.Name)
	}
	for _, t := range b {
		bm[t.Name] = t
		if _, ok := am[t.Name]; !ok {
			names = append(names, t.Name)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	var r Report
	for _, n := range names {
		x, inA := am[n]
		y, inB := bm[n]
		d := TensorDiff{Name: n}
		if inA {
			d.ShapeA = slices.Clone(x.Shape)
			if d.ShapeA == nil {
				d.ShapeA = []int{}
			}
		}
		if inB {
			d.ShapeB = slices.Clone(y.Shape)
			if d.ShapeB == nil {
				d.ShapeB = []int{}
			}
		}
		switch {
		case !inA:
			d.Problem = "only in the second"
		case !inB:
			d.Problem = "only in the first"
		case !slices.Equal(x.Shape, y.Shape) || len(x.Data) != len(y.Data):
			d.Problem = fmt.Sprintf("shape %v vs %v", x.Shape, y.Shape)
		default:
			d.MaxAbs, d.MaxRel, d.Outside = diff(x.Data, y.Data, tol)
		}
		r.Diffs = append(r.Diffs, d)
	}
	return r
}

func diff(a, b []float32, tol Tolerance) (maxAbs, maxRel float64, outside int) {
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		var abs, rel float64
		switch {
		case x == y, math.IsNaN(x) && math.IsNaN(y):
			continue
		case math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0):
			abs, rel = math.Inf(1), math.Inf(1)
		default:
			abs = math.Abs(x - y)
			rel = math.Inf(1)
			if y != 0 {
				rel = abs / math.Abs(y)
			}
		}
		maxAbs, maxRel = max(maxAbs, abs), max(maxRel, rel)
		if !(abs <= tol.ATol+tol.RTol*math.Abs(y)) {
			outside++
		}
	}
	return maxAbs, maxRel, outside
}

// CompareDirs compares the checkpoints at pathA and pathB (each a checkpoint
// directory or a root, see Resolve), whatever stage layout each was saved with. It
// returns the resolved directories too.
func CompareDirs(pathA, pathB string, tol Tolerance) (dirA, dirB string, r Report, err error) {
	dirA, _, err = Resolve(pathA)
	if err != nil {
		return "", "", Report{}, err
	}
	dirB, _, err = Resolve(pathB)
	if err != nil {
		return "", "", Report{}, err
	}
	_, a, err := ReadTensors(dirA)
	if err != nil {
		return "", "", Report{}, err
	}
	_, b, err := ReadTensors(dirB)
	if err != nil {
		return "", "", Report{}, err
	}
	return dirA, dirB, Compare(a, b, tol), nil
}
