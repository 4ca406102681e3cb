package tensor

import "fmt"

// embedDims checks an embedding's operands: the token table [V,D]; the
// activations, one row of D per token ([B,T,D], or [N,D] for one sequence); the
// position table (may be nil), at least [T,D]; tokens within the vocabulary.
// It returns D and T.
func embedDims(op string, table, pos, act *Tensor, tokens []int32) (D, T int) {
	V, D := matDims(op, "token table", table)
	mustLen(op, "activations", act, len(tokens)*D)
	T = len(tokens)
	if len(act.Shape) == 3 {
		T = act.Shape[1]
	}
	if pos != nil {
		if P, pd := matDims(op, "position table", pos); pd != D || P < T {
			panic(fmt.Sprintf("%s: position table %v, want at least [%d %d]", op, pos.Shape, T, D))
		}
	}
	checkIDs(op, "token", tokens, V)
	return D, T
}
