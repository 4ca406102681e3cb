package schedules

import (
	"fmt"
	"slices"
)

// V-Half and V-Min are the controllable-memory V schedules of Qi et al.,
// "Pipeline Parallelism with Controllable Memory" (NeurIPS 2024): two stages
// per rank in a V (VPlacement), the backward split into I and W, built by
// repeating a building block every 6 time slots per micro-batch and then
// squeezing it greedily without raising any rank's activation peak. With
// tF = tI = tW the paper gives peaks of (P+2)/2 (V-Half) and (P+4)/3 (V-Min)
// micro-batches against 1F1B's P, at a bubble of about P/(2M) and 2P/(3M).
//
// The construction follows the authors' reference implementation step by
// step, so the orders are theirs: the block's slot offsets (vBlock), W
// passes placed in the first free slots (placeW), a greedy squeeze
// (squeeze) run once with the W passes and once without, and a final
// unit-cost run (eager) that gives each rank's order.
//
// A rank's six action types, in the slot tables below:
//
//	0 F of the first stage (stage r)       3 I of the first stage
//	1 F of the second stage (stage 2P-1-r) 4 W of the second stage
//	2 I of the second stage                5 W of the first stage
//
// Data flows down the ranks for types 0 and 2 and up for 1 and 3.

// slots is, per rank, per action type, per micro-batch, a slot time.
type slots [][][]int

// vBlock returns the building block's slot offsets of types 0..3 on each of
// p ranks: half for V-Half, else V-Min.
func vBlock(p int, half bool) [][4]int {
	b := make([][4]int, p)
	for i := range p {
		if half {
			gap := 0
			if p%2 == 0 {
				gap = 3
			}
			b[i] = [4]int{2 * i, 3*p - i - 2, 3*p + gap + 2*i - 1, 6*p + gap - i - 2}
		} else {
			gap := 0
			if p%3 == 0 {
				gap = 2
			}
			b[i] = [4]int{i, 2*p - i - 1, 2*p + gap + i, 4*p + gap - i - 1}
		}
	}
	return b
}

// vShape is V-Half (half) or V-Min for p ranks and m micro-batches.
func vShape(p, m int, half bool) *Schedule {
	block := vBlock(p, half)
	sr := make(slots, p)
	for r := range p {
		sr[r] = make([][]int, 4)
		for t := range 4 {
			for k := range m {
				sr[r][t] = append(sr[r][t], block[r][t]+6*k)
			}
		}
	}
	r1 := squeeze(sr, true)
	r2 := squeeze(r1.types(4), false).types(4)
	for r := range r2 {
		r2[r] = placeW(r2[r], true)
	}
	order := eager(r2)
	s := &Schedule{P: p, V: 2, M: m, Placement: VPlacement(p), Ranks: make([][]Action, p)}
	kinds := [6]Kind{F, F, I, I, W, W}
	for r := range p {
		stage := [6]int{r, 2*p - 1 - r, 2*p - 1 - r, r, 2*p - 1 - r, r}
		for _, e := range order[r] {
			s.Ranks[r] = append(s.Ranks[r], Action{kinds[e.typ], stage[e.typ], e.mb})
		}
	}
	return s
}

// types returns s with only the first n action types of every rank.
func (s slots) types(n int) slots {
	out := make(slots, len(s))
	for r := range s {
		out[r] = s[r][:n]
	}
	return out
}

// head is the next action of one type to consider on one rank.
type head struct{ time, rank, typ, mb int }

// next returns the earliest unconsumed entry of s over all ranks and types
// (ties to the lower rank, then type), given how far each list is consumed.
func next(s slots, p [][]int) (head, bool) {
	best, found := head{}, false
	for r := range s {
		for t := range s[r] {
			if p[r][t] >= len(s[r][t]) {
				continue
			}
			h := head{s[r][t][p[r][t]], r, t, p[r][t]}
			if !found || h.time < best.time {
				best, found = h, true
			}
		}
	}
	return best, found
}

func consumed(s slots) [][]int {
	p := make([][]int, len(s))
	for r := range s {
		p[r] = make([]int, len(s[r]))
	}
	return p
}

// lastTime is the largest last entry of one rank's lists.
func lastTime(lists [][]int) int {
	b := 0
	for _, l := range lists {
		if len(l) > 0 {
			b = max(b, l[len(l)-1])
		}
	}
	return b
}

// placeW appends W lists to one rank's four lists: walking the slots in
// order, each free slot takes a W owed by an earlier backward (the second
// stage's first when split, one list for both otherwise); the W passes still
// owed go after the last slot.
func placeW(lists [][]int, split bool) [][]int {
	bound := lastTime(lists[:4])
	out := append(slices.Clone(lists[:4]), nil)
	if split {
		out = append(out, nil)
	}
	var owed [2]int
	p := make([]int, 4)
	for i := 0; i <= bound; i++ {
		t, ok := nextOf(out[:4], p)
		if ok && out[t][p[t]] == i {
			p[t]++
			if t >= 2 {
				w := 0
				if split {
					w = t - 2
				}
				owed[w]++
			}
			continue
		}
		for w := range 2 {
			if owed[w] > 0 {
				out[4+w] = append(out[4+w], i)
				owed[w]--
				break
			}
		}
	}
	i := bound
	for w := range 2 {
		for ; owed[w] > 0; owed[w]-- {
			i++
			out[4+w] = append(out[4+w], i)
		}
	}
	return out
}

// nextOf is the type whose next entry is earliest on one rank.
func nextOf(lists [][]int, p []int) (int, bool) {
	best, found := 0, false
	for t, l := range lists {
		if p[t] < len(l) && (!found || l[p[t]] < lists[best][p[best]]) {
			best, found = t, true
		}
	}
	return best, found
}

// peakOf is one rank's activation peak in stage-micro-batch units: F of
// either stage holds one, W releases it; with no W lists, each free slot
// releases one owed by an earlier backward.
func peakOf(lists [][]int) int {
	delta := []int{1, 1, 0, 0, -1}
	hasW := len(lists) > 4
	p := make([]int, len(lists))
	owed, cur, peak := 0, 0, 0
	for i := 0; i <= lastTime(lists); i++ {
		t, ok := nextOf(lists, p)
		if ok && lists[t][p[t]] == i {
			p[t]++
			cur += delta[min(t, 4)]
			if t == 2 || t == 3 {
				owed++
			}
		} else if !hasW && owed > 0 {
			cur--
			owed--
		}
		peak = max(peak, cur)
	}
	return peak
}

// squeeze moves each action, in slot order, to the earliest free slot after
// its dependencies that does not raise the rank's peak above the largest
// peak of the block schedule. The warm-up moves only with W in the tables
// (withW), the steady state never, the cool-down always. It returns the
// slot times of a unit-cost eager run of the result.
func squeeze(in slots, withW bool) slots {
	s := make(slots, len(in))
	for r := range in {
		s[r] = make([][]int, len(in[r]))
		for t := range in[r] {
			s[r][t] = slices.Clone(in[r][t])
		}
		if withW {
			s[r] = placeW(s[r], false)
		}
	}
	limit := 0
	for r := range s {
		limit = max(limit, peakOf(s[r]))
	}
	occupied := make([][]bool, len(s))
	for r := range s {
		last := s[r][len(s[r])-1]
		occupied[r] = make([]bool, last[len(last)-1]+1)
	}
	p := consumed(s)
	m := len(s[0][0])
	phase := 0
	for {
		h, ok := next(s, p)
		if !ok {
			break
		}
		p[h.rank][h.typ]++
		if h.typ == 3 && h.rank == 0 && phase == 0 {
			phase = 1
		}
		if phase == 1 || (phase == 0 && !withW) {
			if phase == 1 && h.typ == 0 && h.mb == m-1 {
				phase = 2
			}
			occupied[h.rank][h.time] = true
			continue
		}
		cell := &s[h.rank][h.typ][h.mb]
		from := squeezeFrom(s, h) + 1
		if from > h.time {
			panic(fmt.Sprintf("v schedule: rank %d type %d mb %d at slot %d depends on slot %d", h.rank, h.typ, h.mb, h.time, from-1))
		}
		moved := false
		for t := from; t < h.time && !moved; t++ {
			if !occupied[h.rank][t] {
				*cell = t
				moved = peakOf(s[h.rank]) <= limit
			}
		}
		if !moved {
			*cell = h.time
		}
		occupied[h.rank][*cell] = true
	}
	if !withW {
		for r := range s {
			s[r] = placeW(s[r], false)
		}
	}
	return eagerTimes(s)
}

// squeezeFrom is the latest slot of what action h depends on.
func squeezeFrom(s slots, h head) int {
	r, t, mb := h.rank, h.typ, h.mb
	dep := -1
	if (t == 0 || t == 2) && r > 0 {
		dep = max(dep, s[r-1][t][mb])
	}
	if (t == 1 || t == 3) && r+1 < len(s) {
		dep = max(dep, s[r+1][t][mb])
	}
	if t > 0 && t < 4 {
		dep = max(dep, s[r][t-1][mb])
	}
	if t == 4 {
		b := slices.Sorted(slices.Values(append(slices.Clone(s[r][2]), s[r][3]...)))
		dep = max(dep, b[mb])
	}
	if mb > 0 {
		dep = max(dep, s[r][t][mb-1])
	}
	return dep
}

// entry is one action of a rank's final order.
type entry struct{ typ, mb int }

// eagerRun runs every action in slot order as early as its dependencies and
// its rank allow, each taking one time unit, and returns the start times and
// each rank's order.
func eagerRun(s slots) (slots, [][]entry) {
	end := make(slots, len(s))
	for r := range s {
		end[r] = make([][]int, len(s[r]))
		for t := range s[r] {
			end[r][t] = make([]int, len(s[r][t]))
		}
	}
	order := make([][]entry, len(s))
	p := consumed(s)
	for {
		h, ok := next(s, p)
		if !ok {
			break
		}
		p[h.rank][h.typ]++
		r, t, mb := h.rank, h.typ, h.mb
		dep := 0
		after := func(r, t, mb int) {
			if end[r][t][mb] == 0 {
				panic(fmt.Sprintf("v schedule: rank %d type %d mb %d runs before what it depends on", h.rank, h.typ, h.mb))
			}
			dep = max(dep, end[r][t][mb])
		}
		if (t == 0 || t == 2) && r > 0 {
			after(r-1, t, mb)
		}
		if (t == 1 || t == 3) && r+1 < len(s) {
			after(r+1, t, mb)
		}
		if t > 0 && t < 4 {
			after(r, t-1, mb)
		}
		if mb > 0 {
			after(r, t, mb-1)
		}
		if n := len(order[r]); n > 0 {
			after(r, order[r][n-1].typ, order[r][n-1].mb)
		}
		end[r][t][mb] = dep + 1
		order[r] = append(order[r], entry{t, mb})
	}
	for r := range end {
		for t := range end[r] {
			for k := range end[r][t] {
				end[r][t][k]--
			}
		}
	}
	return end, order
}

func eagerTimes(s slots) slots { t, _ := eagerRun(s); return t }
func eager(s slots) [][]entry  { _, o := eagerRun(s); return o }
