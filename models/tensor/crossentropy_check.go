package tensor

import "fmt"

// validCols checks the vocabulary columns of a V-column row: 0 means all.
func validCols(op string, valid, V int) int {
	if valid == 0 {
		return V
	}
	if valid < 0 || valid > V {
		panic(fmt.Sprintf("%s: %d vocabulary columns of %d", op, valid, V))
	}
	return valid
}

// crossEntropyDims checks CrossEntropy's operands: logits and probs [N,V],
// a target per row below the valid columns (0: all V). It returns N, V and
// the valid columns.
func crossEntropyDims(probs, logits *Tensor, targets []int32, valid int) (n, V, cols int) {
	const op = "cross entropy"
	n, V = logits.Rows()
	if len(targets) != n {
		panic(fmt.Sprintf("cross entropy: %d targets for %d rows", len(targets), n))
	}
	mustLen(op, "probs", probs, n*V)
	cols = validCols(op, valid, V)
	checkIDs(op, "target", targets, cols)
	return n, V, cols
}

// crossEntropyBackwardDims checks probs and dlogits [N,V] and a target per
// row within V, and returns N and V.
func crossEntropyBackwardDims(dlogits, probs *Tensor, targets []int32) (n, V int) {
	const op = "cross entropy backward"
	n, V = probs.Rows()
	mustLen(op, "dlogits", dlogits, n*V)
	if len(targets) != n {
		panic(fmt.Sprintf("cross entropy backward: %d targets for %d rows", len(targets), n))
	}
	checkIDs(op, "target", targets, V)
	return n, V
}
