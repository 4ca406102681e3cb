package tensor

import "fmt"

// matMulDims checks the operands of c = op(a)·op(b) (leading dimensions
// flattened) and returns the product's m×n×k and the row lengths of a and b,
// for every backend's MatMul.
func matMulDims(cc, a *Tensor, ta bool, b *Tensor, tb bool) (m, n, k, lda, ldb int) {
	ar, ac := a.Rows()
	br, bc := b.Rows()
	m, k = ar, ac
	if ta {
		m, k = ac, ar
	}
	k2, n := br, bc
	if tb {
		k2, n = bc, br
	}
	cr, ccols := cc.Rows()
	if k != k2 || cr != m || ccols != n {
		panic(fmt.Sprintf("matmul: op(a) %dx%d, op(b) %dx%d, c %v", m, k, k2, n, cc.Shape))
	}
	return m, n, k, ac, bc
}

// linearDims checks Linear's operands, x [N,in], w [out,in], y [N,out],
// bias [out] and residual [N,out] (either may be nil), and returns N, in
// and out.
func linearDims(y, x, w, bias, residual *Tensor) (n, in, out int) {
	const op = "linear"
	n, in = x.Rows()
	out, _ = matDims(op, "w", w)
	mustShape("linear weight", w, out, in)
	mustLen(op, "y", y, n*out)
	if bias != nil {
		mustLen(op, "bias", bias, out)
	}
	if residual != nil {
		mustLen(op, "residual", residual, n*out)
	}
	return n, in, out
}

// linearBackwardInputDims checks dx [N,in] and dy [N,out] against w
// [out,in] and returns N, in and out.
func linearBackwardInputDims(dx, dy, w *Tensor) (n, in, out int) {
	const op = "linear backward input"
	out, in = matDims(op, "w", w)
	n = dy.Len() / out
	mustLen(op, "dy", dy, n*out)
	mustLen(op, "dx", dx, n*in)
	return n, in, out
}

// linearBackwardWeightDims checks dy [N,out], x [N,in] and dbias [out]
// (may be nil) against dw [out,in] and returns N, in and out.
func linearBackwardWeightDims(dw, dbias, dy, x *Tensor) (n, in, out int) {
	const op = "linear backward weight"
	out, in = matDims(op, "dw", dw)
	n = x.Len() / in
	mustLen(op, "dy", dy, n*out)
	mustLen(op, "x", x, n*in)
	if dbias != nil {
		mustLen(op, "dbias", dbias, out)
	}
	return n, in, out
}
