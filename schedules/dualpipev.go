package schedules

// dualPipeV is DeepSeek's DualPipeV: DualPipe (DeepSeek-V3 technical
// report, 2024) cut in half, so that p ranks hold 2p stages in a V
// (VPlacement) and micro-batches enter at rank 0 only. Its steady state
// pairs the forward of one micro-batch on one stage with the full backward
// of another on the other stage; DualPipe overlaps each pair's compute with
// the other's transfers. The executor here has no fused action, so a pair is
// the two actions in a row (forward first), which keeps the order and the
// memory and leaves the overlap to the transfers running asynchronously.
//
// The order is the one of DeepSeek's reference and PyTorch's
// ScheduleDualPipeV, for rank r with first stage s0 = r and second stage
// s1 = 2p-1-r:
//
//  1. 2(p-r-1) forwards of s0;
//  2. r+1 pairs of forwards (s0, s1);
//  3. p-r-1 rounds of I, W, F on s1 (zero-bubble style);
//  4. m-2p+r+1 rounds of the pairs (F s0, B s1) and (F s1, B s0);
//  5. p-r-1 rounds of B s1, then the pair (F s1, B s0);
//  6. r+1 rounds of backwards of s1 and s0, full in the first half and split
//     (I now, W later) from the middle on;
//  7. p-r-1 rounds of a deferred W, then a backward of s0;
//  8. the r+1 deferred W passes left.
//
// W passes run oldest first. It needs m >= 2p micro-batches; for fewer it is
// built for 2p and the extra micro-batches' actions are dropped
// (dependencies stay within a micro-batch, so the order still runs).
func dualPipeV(p, m int) *Schedule {
	s := &Schedule{P: p, V: 2, M: m, Placement: VPlacement(p), Ranks: make([][]Action, p)}
	n := max(m, 2*p)
	for r := range p {
		s.Ranks[r] = dualPipeVRank(p, m, n, r)
	}
	return s
}

// dualPipeVRank is rank r's list of DualPipeV built for n micro-batches,
// keeping those below m.
func dualPipeVRank(p, m, n, r int) []Action {
	stage := [2]int{r, 2*p - 1 - r}
	var nf, nb [2]int
	type pend struct{ c, mb int }
	var queue []pend // I passes whose W is still to run
	var l []Action
	emit := func(a Action) {
		if a.Micro < m {
			l = append(l, a)
		}
	}
	fwd := func(c int) { emit(Action{F, stage[c], nf[c]}); nf[c]++ }
	back := func(k Kind, c int) {
		emit(Action{k, stage[c], nb[c]})
		if k == I {
			queue = append(queue, pend{c, nb[c]})
		}
		nb[c]++
	}
	weight := func() {
		if len(queue) > 0 {
			w := queue[0]
			queue = queue[1:]
			emit(Action{W, stage[w.c], w.mb})
		}
	}
	for range 2 * (p - r - 1) {
		fwd(0)
	}
	for range r + 1 {
		fwd(0)
		fwd(1)
	}
	for range p - r - 1 {
		back(I, 1)
		weight()
		fwd(1)
	}
	for range n - 2*p + r + 1 {
		fwd(0)
		back(B, 1)
		fwd(1)
		back(B, 0)
	}
	for range p - r - 1 {
		back(B, 1)
		fwd(1)
		back(B, 0)
	}
	split := false
	kind := func() Kind {
		if split {
			return I
		}
		return B
	}
	half := (r + 1) / 2
	for i := range r + 1 {
		if i == half && r%2 == 1 {
			split = true
		}
		back(kind(), 1)
		if i == half && r%2 == 0 {
			split = true
		}
		back(kind(), 0)
	}
	for range p - r - 1 {
		weight()
		back(kind(), 0)
	}
	for range r + 1 {
		weight()
	}
	return l
}
