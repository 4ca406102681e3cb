package schedules

// stream is one rank in streamRun: the host walking its list, and the
// transfer groups issued to its communication stream.
type stream struct {
	list    []Action
	groups  [][]int // non-local transfers only, in issue order
	last    []int   // per group: the list index after which it is issued
	pc      int     // the host's next action
	issued  int     // groups issued so far
	head    int     // the group running on the stream
	done    map[int]bool
	needs   map[Action]int // received input -> index of its receive
	blocked int            // index of the receive the host waits for, -1 if none
}

func newStream(s *Schedule, r int, g Grouping) *stream {
	st := &stream{list: s.Ranks[r], done: map[int]bool{}, needs: map[Action]int{}, blocked: -1}
	for _, grp := range g(st.list) {
		var keep []int
		for _, i := range grp {
			if q := s.Peer(st.list[i]); q >= 0 && q != r {
				keep = append(keep, i)
			}
		}
		if len(keep) > 0 {
			st.groups = append(st.groups, keep)
			st.last = append(st.last, maxOf(keep))
		}
	}
	for i, a := range st.list {
		if (a.Kind == RecvF || a.Kind == RecvB) && s.Peer(a) != r && s.Peer(a) >= 0 {
			st.needs[a] = i
		}
	}
	return st
}

func maxOf(xs []int) int {
	m := xs[0]
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// input is the receive that compute action a waits for, or -1.
func (st *stream) input(a Action) int {
	var k Kind
	switch a.Kind {
	case F:
		k = RecvF
	case B, I:
		k = RecvB
	default:
		return -1
	}
	if i, ok := st.needs[Action{k, a.Stage, a.Micro}]; ok {
		return i
	}
	return -1
}

// advanceHost runs the host as far as it can; it reports progress.
func (st *stream) advanceHost() bool {
	moved := false
	for st.pc < len(st.list) {
		a := st.list[st.pc]
		if a.Kind.IsCompute() {
			if j := st.input(a); j >= 0 && !st.done[j] {
				st.blocked = j
				return moved
			}
		}
		st.blocked = -1
		st.pc++
		moved = true
		for st.issued < len(st.groups) && st.last[st.issued] < st.pc {
			st.issued++
		}
	}
	return moved
}

// running reports whether list index i is in the group on the stream now.
func (st *stream) running(i int) bool {
	if st.head >= st.issued {
		return false
	}
	for _, j := range st.groups[st.head] {
		if j == i {
			return true
		}
	}
	return false
}

// streamRun is rule 2: it runs hosts and streams until nothing moves.
func streamRun(s *Schedule, g Grouping, partner map[loc]loc) error {
	sts := make([]*stream, s.P)
	for r := range s.P {
		sts[r] = newStream(s, r, g)
	}
	for progress := true; progress; {
		progress = false
		for r, st := range sts {
			if st.advanceHost() {
				progress = true
			}
			for st.head < st.issued {
				grp := st.groups[st.head]
				for _, i := range grp {
					p := partner[loc{r, i}]
					if !st.done[i] && sts[p.rank].running(p.step) {
						st.done[i], sts[p.rank].done[p.step] = true, true
						progress = true
					}
				}
				if !allDone(st.done, grp) {
					break
				}
				st.head++
				progress = true
			}
		}
	}
	return streamDeadlock(s, sts, partner)
}

func allDone(done map[int]bool, grp []int) bool {
	for _, i := range grp {
		if !done[i] {
			return false
		}
	}
	return true
}

// streamDeadlock names, for every rank that did not finish, the transfer
// its stream is stuck in (or the receive its host waits for that was never
// issued).
func streamDeadlock(s *Schedule, sts []*stream, partner map[loc]loc) error {
	var waits []Wait
	var marks []loc
	for r, st := range sts {
		if st.pc == len(st.list) && st.head == len(st.groups) {
			continue
		}
		if st.head < st.issued {
			for _, i := range st.groups[st.head] {
				if st.done[i] {
					continue
				}
				p := partner[loc{r, i}]
				w := Wait{Rank: r, Step: i, Action: st.list[i], Peer: p.rank, Needs: s.Ranks[p.rank][p.step], PeerStep: -1}
				if ps := sts[p.rank]; ps.pc < len(ps.list) {
					w.PeerStep, w.PeerAt = ps.pc, ps.list[ps.pc]
				}
				waits, marks = append(waits, w), append(marks, loc{r, i})
				break
			}
			continue
		}
		j := st.blocked
		if j < 0 {
			j = st.pc
		}
		w := Wait{Rank: r, Step: st.pc, Action: st.list[min(st.pc, len(st.list)-1)], Peer: r, Needs: st.list[j], PeerStep: -1}
		waits, marks = append(waits, w), append(marks, loc{r, st.pc})
	}
	if len(waits) == 0 {
		return nil
	}
	return &DeadlockError{Waits: waits, Grid: grid(s, marks), Why: "on a backend that pairs transfers by order (NCCL: each rank's transfer groups run one after another on its stream)"}
}
