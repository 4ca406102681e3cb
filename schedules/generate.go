package schedules

// Generate returns the named schedule for p ranks and m micro-batches, lowered
// (with transfers, see Lower) and validated. v is the number of virtual stages
// per rank, 0 for the schedule's own; Resolve says which are valid.
func Generate(name string, p, m, v int) (*Schedule, error) {
	s, err := GenerateCompute(name, p, m, v)
	if err != nil {
		return nil, err
	}
	return Lower(s)
}

// GenerateCompute returns the named schedule without transfers.
func GenerateCompute(name string, p, m, v int) (*Schedule, error) {
	v, err := Resolve(name, p, m, v)
	if err != nil {
		return nil, err
	}
	switch name {
	case "gpipe":
		return gpipe(p, m), nil
	case "1f1b":
		return oneFOneB(p, m), nil
	case "interleaved":
		return interleaved(p, m, v), nil
	case "zb-h1":
		return zbH1(p, m), nil
	case "zb-v":
		return zbV(p, m), nil
	case "v-half":
		return vShape(p, m, true), nil
	case "v-min":
		return vShape(p, m, false), nil
	default: // "dualpipev"
		return dualPipeV(p, m), nil
	}
}

func newLooped(p, m, v int) *Schedule {
	return &Schedule{P: p, V: v, M: m, Placement: LoopedPlacement(p, v), Ranks: make([][]Action, p)}
}

// gpipe: all forwards, then all backwards, in micro-batch order. Every rank
// holds all M micro-batches' activations at once.
func gpipe(p, m int) *Schedule {
	s := newLooped(p, m, 1)
	for r := range p {
		for i := range m {
			s.Ranks[r] = append(s.Ranks[r], Action{F, r, i})
		}
		for i := range m {
			s.Ranks[r] = append(s.Ranks[r], Action{B, r, i})
		}
	}
	return s
}

// oneFOneB: rank r runs p-1-r warm-up forwards, then alternates one forward
// and one backward, then drains the backwards; it never holds more than
// p-r micro-batches.
func oneFOneB(p, m int) *Schedule {
	s := newLooped(p, m, 1)
	for r := range p {
		w := min(p-1-r, m)
		l := s.Ranks[r]
		for i := range w {
			l = append(l, Action{F, r, i})
		}
		for k := range m - w {
			l = append(l, Action{F, r, w + k}, Action{B, r, k})
		}
		for k := m - w; k < m; k++ {
			l = append(l, Action{B, r, k})
		}
		s.Ranks[r] = l
	}
	return s
}

// interleaved is Megatron-LM's interleaved 1F1B: rank r holds stages r, r+p,
// ..., r+(v-1)p. Micro-batches go in groups of p; each group runs through
// chunk 0, then chunk 1, ... (backwards through the chunks in reverse). Rank r
// runs (p-1-r)·2 + (v-1)·p warm-up forwards, then alternates one forward and
// one backward, then drains.
//
// When m is not a multiple of p, the schedule is built for m rounded up to
// the next multiple of p and the actions of the extra micro-batches are
// dropped. Dependencies only run within a micro-batch, so an order that the
// full schedule can run in stays runnable without them (Megatron's own rule
// for a short last group, the same warm-up with fewer micro-batches, can
// deadlock: p=5, m=7, v=2).
func interleaved(p, m, v int) *Schedule {
	mp := (m + p - 1) / p * p
	s := newLooped(p, m, v)
	for r := range p {
		var fwd, bwd []Action
		for g := 0; g < mp; g += p {
			for c := range v {
				for i := range p {
					fwd = append(fwd, Action{F, c*p + r, g + i})
					bwd = append(bwd, Action{B, (v-1-c)*p + r, g + i})
				}
			}
		}
		w := min((p-1-r)*2+(v-1)*p, len(fwd))
		l := append([]Action(nil), fwd[:w]...)
		for k := range len(fwd) - w {
			l = append(l, fwd[w+k], bwd[k])
		}
		l = append(l, bwd[len(fwd)-w:]...)
		for _, a := range l {
			if a.Micro < m {
				s.Ranks[r] = append(s.Ranks[r], a)
			}
		}
	}
	return s
}

// zbH1 is the zero-bubble schedule ZB-H1 (Qi et al., "Zero Bubble Pipeline
// Parallelism", 2023): the backward is split into I (input gradient, on the
// critical path) and W (weight gradient, needed only by the optimizer), and
// the W passes fill what would be bubbles in 1F1B. Rank r runs 1F1B's p-1-r
// warm-up forwards, then F, I pairs, but starts its W passes r steps late;
// the r deferred W passes fill the cool-down. Every rank then holds at most p
// micro-batches (a micro-batch is live from its F to its W), the peak of
// 1F1B's rank 0. With tF = tI = tW and m >= p the makespan is (3m+p-1)·tF
// against 1F1B's 3(m+p-1)·tF.
func zbH1(p, m int) *Schedule {
	s := newLooped(p, m, 1)
	for r := range p {
		w := min(p-1-r, m)
		var l []Action
		for i := range w {
			l = append(l, Action{F, r, i})
		}
		nw := 0
		for k := range m {
			if w+k < m {
				l = append(l, Action{F, r, w + k})
			}
			l = append(l, Action{I, r, k})
			if k+1-nw > r {
				l = append(l, Action{W, r, nw})
				nw++
			}
		}
		for ; nw < m; nw++ {
			l = append(l, Action{W, r, nw})
		}
		s.Ranks[r] = l
	}
	return s
}

// zbV is the zero-bubble V schedule ZB-V of the zero-bubble pipeline work
// (Qi et al., 2024), in the form torch.distributed.pipelining generates: 2p stages in a V (rank r holds stages r and 2p-1-r, see
// VPlacement), the backward split into I and W. Rank r runs 2(p-r)-1
// forwards of its first stage, then r pairs of forwards (second stage, first
// stage), then p-r rounds of F, I, W on its second stage; then rounds of
// (F, I, W on the first stage; F, I, W on the second) until every forward is
// done; the cool-down runs the remaining I passes first and the W passes
// last, where they fill the tail. It needs m >= 2p-1 micro-batches; for
// fewer it is built for 2p-1 and the extra micro-batches' actions are
// dropped (dependencies stay within a micro-batch, so the order still runs).
// No rank holds more than p micro-batches, 1F1B's peak.
func zbV(p, m int) *Schedule {
	s := &Schedule{P: p, V: 2, M: m, Placement: VPlacement(p), Ranks: make([][]Action, p)}
	n := max(2*p-1, m)
	for r := range p {
		stage := [2]int{r, 2*p - 1 - r}
		var nf, ni, nw [2]int
		var l []Action
		add := func(k Kind, c int, next *[2]int) {
			if next[c] < m {
				l = append(l, Action{k, stage[c], next[c]})
			}
			next[c]++
		}
		for range 2*(p-r) - 1 {
			add(F, 0, &nf)
		}
		for range r {
			add(F, 1, &nf)
			add(F, 0, &nf)
		}
		backward := func(c int) {
			add(I, c, &ni)
			add(W, c, &nw)
		}
		for range p - r {
			add(F, 1, &nf)
			backward(1)
		}
		for nf[1] < nf[0] || nf[0] < n {
			if nf[0] < n {
				add(F, 0, &nf)
			}
			backward(0)
			add(F, 1, &nf)
			backward(1)
		}
		for range r {
			add(I, 0, &ni)
			add(I, 1, &ni)
		}
		for range p - r {
			backward(0)
		}
		for nw[1] < ni[1] {
			add(W, 1, &nw)
		}
		for nw[0] < ni[0] {
			add(W, 0, &nw)
		}
		s.Ranks[r] = l
	}
	return s
}
