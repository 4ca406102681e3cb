package checkpoint

import (
	"math"
	"strings"
	"testing"
)

func TestReportWrite(t *testing.T) {
	for _, c := range []struct {
		name string
		r    Report
		tol  Tolerance
		want string
	}{
		{"all match", Report{Diffs: []TensorDiff{{Name: "wte", ShapeA: []int{2, 2}, ShapeB: []int{2, 2}}}}, Tolerance{}, `match: |a-b| <= 0 + 0*|b|

tensor  shape  max |a-b|  max |a-b|/|b|  result
wte     [2 2]  0          0              ok

1 tensors: 1 match, 0 differ
`},
		{"differ", Report{Diffs: []TensorDiff{
			{Name: "h.0.b", ShapeA: []int{1}, ShapeB: []int{1}, MaxAbs: 0.25, MaxRel: math.Inf(1), Outside: 1},
			{Name: "h.0.w", ShapeB: []int{1, 2}, Problem: "missing in a"},
			{Name: "wte", ShapeA: []int{2, 2}, ShapeB: []int{2, 2}, MaxAbs: 1e-7, MaxRel: 2.5e-8},
		}}, Tolerance{RTol: 1e-5, ATol: 1e-6}, `match: |a-b| <= 1e-06 + 1e-05*|b|

tensor  shape  max |a-b|  max |a-b|/|b|  result
h.0.b   [1]    0.25       +Inf           DIFFERS: 1 elements outside tolerance
h.0.w   [1 2]  -          -              DIFFERS: missing in a
wte     [2 2]  1e-07      2.5e-08        ok

3 tensors: 1 match, 2 differ
`},
	} {
		var b strings.Builder
		if err := c.r.Write(&b, c.tol); err != nil {
			t.Fatal(err)
		}
		if b.String() != c.want {
			t.Errorf("%s: got\n%s\nwant\n%s", c.name, b.String(), c.want)
		}
	}
}
