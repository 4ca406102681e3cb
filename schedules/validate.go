package schedules

import (
	"fmt"
	"strings"
)

// Error is a schedule that breaks a rule. Rank and Step locate the offending
// action (Step is its index in the rank's list); both are -1 when the rule is
// about the schedule's shape rather than one action.
type Error struct {
	Rank, Step int
	Action     Action
	Reason     string
	// Grid is the rank × step grid around the offending action, which is
	// written [in brackets]; empty for shape errors.
	Grid string
}

func (e *Error) Error() string {
	if e.Rank < 0 {
		return "invalid schedule: " + e.Reason
	}
	if e.Step < 0 {
		return fmt.Sprintf("invalid schedule: rank %d: %s\n%s", e.Rank, e.Reason, e.Grid)
	}
	return fmt.Sprintf("invalid schedule: rank %d step %d (%v): %s\n%s", e.Rank, e.Step, e.Action, e.Reason, e.Grid)
}

// Wait is one rank blocked in a deadlock.
type Wait struct {
	Rank, Step int    // the blocked rank and the index of the action it is blocked in
	Action     Action // the action it is blocked in
	Peer       int    // the rank it waits on
	Needs      Action // what the peer must reach for Action to proceed
	PeerStep   int    // where the peer is stuck, -1 if it has finished
	PeerAt     Action // the action the peer is stuck in (when PeerStep >= 0)
}

func (w Wait) String() string {
	where := "it has finished its list"
	if w.PeerStep >= 0 {
		where = fmt.Sprintf("it is blocked at step %d in %v", w.PeerStep, w.PeerAt)
	}
	if w.Action.Kind.IsTransfer() {
		return fmt.Sprintf("rank %d step %d %v waits for rank %d to post %v (%s)", w.Rank, w.Step, w.Action, w.Peer, w.Needs, where)
	}
	return fmt.Sprintf("rank %d step %d %v waits for %v on rank %d (%s)", w.Rank, w.Step, w.Action, w.Needs, w.Peer, where)
}

// DeadlockError lists every rank that is blocked when no rank can proceed.
type DeadlockError struct {
	Waits []Wait
	Grid  string // the rank × step grid, each blocked action [in brackets]
	// Why names the model under which it deadlocks ("" for the rendezvous
	// of Validate's dry run).
	Why string
}

func (e *DeadlockError) Error() string {
	var b strings.Builder
	if e.Why != "" {
		fmt.Fprintf(&b, "schedule deadlocks %s: %d ranks blocked", e.Why, len(e.Waits))
	} else {
		fmt.Fprintf(&b, "schedule deadlocks: %d ranks blocked", len(e.Waits))
	}
	for _, w := range e.Waits {
		b.WriteString("\n  ")
		b.WriteString(w.String())
	}
	b.WriteByte('\n')
	b.WriteString(e.Grid)
	return b.String()
}

// loc is where an action sits: rank and index in that rank's list.
type loc struct{ rank, step int }

// checker holds the index of a schedule's actions.
type checker struct {
	s *Schedule
	// dense maps id(a) to a's place (rank -1: absent). A complete schedule
	// has at least 2·S·M actions, so dense is small; for text with huge
	// stage or micro-batch numbers and few actions sparse is used instead.
	dense  []loc
	sparse map[Action]loc
	// computeOnly relaxes the rules for Lower's input: no transfers allowed,
	// and a cross-rank input needs no receive.
	computeOnly bool
}

// Validate checks s: its shape (P, V, M, placement: each stage on one rank,
// every rank holding V stages); that every (stage, micro) has exactly one F
// and either one B or one I and one W, on the stage's rank, in dependency
// order; that every transfer is between different ranks and has its matching
// peer transfer; and, by a dry run, that executing every rank's list in order,
// where a SEND completes only together with the peer's matching RECV
// (rendezvous, as with NCCL) and compute never waits, finishes on every rank.
//
// Hence a validated schedule cannot deadlock when every rank issues its
// actions in list order and each transfer blocks until its peer reaches the
// matching one. An executor may run transfers asynchronously as long as it
// issues the transfers to each peer in list order. Last, CheckPairing runs
// the transfers, issued one by one, through the rules of a backend that
// pairs them by order and runs them on one stream per rank (NCCL), so the
// guarantee holds there too.
//
// The error is an *Error (with the grid), a *DeadlockError or a *PairingError.
func Validate(s *Schedule) error {
	_, err := validate(s)
	return err
}

// validate is Validate, returning the index it built.
func validate(s *Schedule) (*checker, error) {
	c, err := checkStatic(s, false)
	if err != nil {
		return nil, err
	}
	if err := c.dryRun(); err != nil {
		return nil, err
	}
	return c, CheckPairing(s, Singly)
}

// checkStatic runs the checks that need no execution, shared by Validate and
// Lower: shape, placement, uniqueness, completeness and per-rank order.
func checkStatic(s *Schedule, computeOnly bool) (*checker, error) {
	c, err := newChecker(s, computeOnly)
	if err != nil {
		return nil, err
	}
	if err := c.complete(); err != nil {
		return nil, err
	}
	if err := c.order(); err != nil {
		return nil, err
	}
	return c, nil
}

// newChecker checks the shape, the range, placement and uniqueness of every
// action, and indexes them.
func newChecker(s *Schedule, computeOnly bool) (*checker, error) {
	shape := func(format string, args ...any) error {
		return &Error{Rank: -1, Step: -1, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case s.P < 1:
		return nil, shape("P=%d ranks; need at least 1", s.P)
	case len(s.Ranks) != s.P:
		return nil, shape("P=%d ranks but %d action lists", s.P, len(s.Ranks))
	case s.V < 1:
		return nil, shape("V=%d virtual stages per rank; need at least 1", s.V)
	case s.M < 1:
		return nil, shape("M=%d micro-batches; need at least 1", s.M)
	case len(s.Placement) != s.P*s.V:
		return nil, shape("%d stages on %d ranks: every rank must hold the same number of stages (want P·V = %d·%d = %d)", len(s.Placement), s.P, s.P, s.V, s.P*s.V)
	}
	held := make([]int, s.P)
	for st, r := range s.Placement {
		if r == -1 {
			// Parse leaves a stage that no line mentions unplaced.
			return nil, shape("stage %d is on no rank: no rank's list holds an action of it (stages must be numbered 0..%d without gaps)", st, len(s.Placement)-1)
		}
		if r < 0 || r >= s.P {
			return nil, shape("stage %d is placed on rank %d, which does not exist (P=%d)", st, r, s.P)
		}
		held[r]++
	}
	n := 0
	for _, l := range s.Ranks {
		n += len(l)
	}
	c := &checker{s: s, computeOnly: computeOnly}
	if size := int(numKinds) * len(s.Placement) * s.M; size <= 8*n+1024 {
		c.dense = make([]loc, size)
		for i := range c.dense {
			c.dense[i].rank = -1
		}
	} else {
		c.sparse = make(map[Action]loc, n)
	}
	for r, l := range s.Ranks {
		for i, a := range l {
			switch {
			case a.Kind >= numKinds:
				return nil, c.errAt(r, i, "unknown action kind %d", a.Kind)
			case a.Stage < 0 || a.Stage >= len(s.Placement):
				return nil, c.errAt(r, i, "stage %d out of range [0, %d)", a.Stage, len(s.Placement))
			case a.Micro < 0 || a.Micro >= s.M:
				return nil, c.errAt(r, i, "micro-batch %d out of range [0, %d)", a.Micro, s.M)
			case s.Placement[a.Stage] != r:
				return nil, c.errAt(r, i, "stage %d lives on rank %d, not on rank %d (each stage lives on one rank)", a.Stage, s.Placement[a.Stage], r)
			case computeOnly && a.Kind.IsTransfer():
				return nil, c.errAt(r, i, "a compute-only schedule must not hold transfers")
			}
			if p, dup := c.at(a); dup {
				return nil, c.errAt(r, i, "%v appears twice (also at rank %d step %d)", a, p.rank, p.step)
			}
			c.put(a, loc{r, i})
		}
	}
	for r, n := range held {
		if n != s.V {
			return nil, shape("rank %d holds %d stages %v; every rank must hold V=%d", r, n, s.StagesOf(r), s.V)
		}
	}
	return c, nil
}

func (c *checker) errAt(rank, step int, format string, args ...any) *Error {
	var a Action
	if step >= 0 {
		a = c.s.Ranks[rank][step]
	}
	return &Error{Rank: rank, Step: step, Action: a, Reason: fmt.Sprintf(format, args...),
		Grid: grid(c.s, []loc{{rank, step}})}
}

// id numbers the actions of a schedule densely; only for in-range actions.
func (c *checker) id(a Action) int {
	return (int(a.Kind)*len(c.s.Placement)+a.Stage)*c.s.M + a.Micro
}

// at returns where a is in the schedule.
func (c *checker) at(a Action) (loc, bool) {
	if c.dense == nil {
		p, ok := c.sparse[a]
		return p, ok
	}
	p := c.dense[c.id(a)]
	return p, p.rank >= 0
}

func (c *checker) put(a Action, p loc) {
	if c.dense == nil {
		c.sparse[a] = p
	} else {
		c.dense[c.id(a)] = p
	}
}

func (c *checker) has(a Action) bool { _, ok := c.at(a); return ok }

// complete checks that every (stage, micro) has one F and one backward.
func (c *checker) complete() error {
	s := c.s
	for st := range s.Placement {
		for m := range s.M {
			f, fok := c.at(Action{F, st, m})
			if !fok {
				r := s.Placement[st]
				return &Error{Rank: r, Step: -1, Reason: fmt.Sprintf("stage %d micro-batch %d has no forward %v (stage %d lives on rank %d)", st, m, Action{F, st, m}, st, r), Grid: grid(s, nil)}
			}
			b, i, w := c.has(Action{B, st, m}), c.has(Action{I, st, m}), c.has(Action{W, st, m})
			switch {
			case !b && !i && !w:
				return c.errAt(f.rank, f.step, "no backward for stage %d micro-batch %d: neither %v nor %v and %v is on rank %d", st, m, Action{B, st, m}, Action{I, st, m}, Action{W, st, m}, f.rank)
			case b && (i || w):
				p, _ := c.at(Action{B, st, m})
				return c.errAt(p.rank, p.step, "stage %d micro-batch %d has both a full backward B and a split one (I/W); use one or the other", st, m)
			case i && !w:
				p, _ := c.at(Action{I, st, m})
				return c.errAt(p.rank, p.step, "%v has no weight-gradient %v", Action{I, st, m}, Action{W, st, m})
			case w && !i:
				p, _ := c.at(Action{W, st, m})
				return c.errAt(p.rank, p.step, "%v has no input-gradient %v", Action{W, st, m}, Action{I, st, m})
			}
		}
	}
	return nil
}

// order checks, for every action, that what it needs comes before it on its
// own rank and that each transfer has a peer.
func (c *checker) order() error {
	s := c.s
	last := len(s.Placement) - 1
	for r, l := range s.Ranks {
		for i, a := range l {
			if msg := c.needs(r, i, a, last); msg != "" {
				return c.errAt(r, i, "%s", msg)
			}
		}
	}
	return nil
}

// before reports whether a is on rank r before step.
func (c *checker) before(a Action, r, step int) bool {
	p, ok := c.at(a)
	return ok && p.rank == r && p.step < step
}

// gradBefore reports whether the input gradient of (stage, micro), from B or
// I, is on rank r before step.
func (c *checker) gradBefore(stage, micro, r, step int) bool {
	return c.before(Action{B, stage, micro}, r, step) || c.before(Action{I, stage, micro}, r, step)
}

// needs returns what is wrong with action a at rank r, step i, or "".
func (c *checker) needs(r, i int, a Action, last int) string {
	s := c.s
	st, m := a.Stage, a.Micro
	switch a.Kind {
	case F:
		if st == 0 {
			return ""
		}
		if s.Placement[st-1] == r {
			if !c.before(Action{F, st - 1, m}, r, i) {
				return fmt.Sprintf("needs the output of %v, which does not run before it on this rank", Action{F, st - 1, m})
			}
		} else if !c.computeOnly && !c.before(Action{RecvF, st, m}, r, i) {
			return fmt.Sprintf("needs its input from rank %d: %v must come before it", s.Placement[st-1], Action{RecvF, st, m})
		}
	case B, I:
		if !c.before(Action{F, st, m}, r, i) {
			return fmt.Sprintf("runs before its forward %v", Action{F, st, m})
		}
		if st == last {
			return ""
		}
		if s.Placement[st+1] == r {
			if !c.gradBefore(st+1, m, r, i) {
				return fmt.Sprintf("needs the gradient from stage %d (%v or %v), which does not run before it on this rank", st+1, Action{B, st + 1, m}, Action{I, st + 1, m})
			}
		} else if !c.computeOnly && !c.before(Action{RecvB, st, m}, r, i) {
			return fmt.Sprintf("needs its output gradient from rank %d: %v must come before it", s.Placement[st+1], Action{RecvB, st, m})
		}
	case W:
		if !c.before(Action{I, st, m}, r, i) {
			return fmt.Sprintf("runs before its input-gradient %v", Action{I, st, m})
		}
	default:
		return c.transferNeeds(r, i, a, last)
	}
	return ""
}

func (c *checker) transferNeeds(r, i int, a Action, last int) string {
	st, m := a.Stage, a.Micro
	switch {
	case (a.Kind == SendF || a.Kind == RecvB) && st == last:
		return fmt.Sprintf("stage %d is the last stage; there is no next stage to exchange with", st)
	case (a.Kind == RecvF || a.Kind == SendB) && st == 0:
		return "stage 0 is the first stage; there is no previous stage to exchange with"
	}
	peer := c.s.Peer(a)
	if peer == r {
		return fmt.Sprintf("stage %d is on this same rank; no transfer is needed", a.peerStage())
	}
	switch a.Kind {
	case SendF:
		if !c.before(Action{F, st, m}, r, i) {
			return fmt.Sprintf("sends before its forward %v has run", Action{F, st, m})
		}
	case SendB:
		if !c.gradBefore(st, m, r, i) {
			return fmt.Sprintf("sends before its backward (%v or %v) has run", Action{B, st, m}, Action{I, st, m})
		}
	}
	mt, _ := a.Matching()
	if !c.has(mt) {
		return fmt.Sprintf("has no matching %v on rank %d", mt, peer)
	}
	return ""
}

// dryRun executes every list in order with rendezvous transfers: compute
// always proceeds (order() has checked its inputs), a transfer proceeds only
// together with its peer's matching transfer.
func (c *checker) dryRun() error {
	s := c.s
	pc := make([]int, s.P)
	for progress := true; progress; {
		progress = false
		for r := range s.P {
			for pc[r] < len(s.Ranks[r]) {
				a := s.Ranks[r][pc[r]]
				if a.Kind.IsCompute() {
					pc[r]++
					progress = true
					continue
				}
				q := s.Peer(a)
				mt, _ := a.Matching()
				if pc[q] < len(s.Ranks[q]) && s.Ranks[q][pc[q]] == mt {
					pc[r]++
					pc[q]++
					progress = true
					continue
				}
				break
			}
		}
	}
	var waits []Wait
	var marks []loc
	for r := range s.P {
		if pc[r] == len(s.Ranks[r]) {
			continue
		}
		a := s.Ranks[r][pc[r]]
		q := s.Peer(a)
		mt, _ := a.Matching()
		w := Wait{Rank: r, Step: pc[r], Action: a, Peer: q, Needs: mt, PeerStep: -1}
		if pc[q] < len(s.Ranks[q]) {
			w.PeerStep, w.PeerAt = pc[q], s.Ranks[q][pc[q]]
		}
		waits = append(waits, w)
		marks = append(marks, loc{r, pc[r]})
	}
	if len(waits) == 0 {
		return nil
	}
	return &DeadlockError{Waits: waits, Grid: grid(s, marks)}
}

// gridCols is the most steps an error grid shows.
const gridCols = 24

// grid renders the rank × step table around the marked actions, which are
// written [in brackets].
func grid(s *Schedule, marks []loc) string {
	width := 0
	for _, l := range s.Ranks {
		width = max(width, len(l))
	}
	lo, hi := 0, width
	if len(marks) > 0 {
		lo, hi = width, 0
		for _, m := range marks {
			lo, hi = min(lo, max(m.step, 0)), max(hi, m.step+1)
		}
		lo, hi = max(0, lo-4), min(width, hi+4)
	}
	hi = min(hi, lo+gridCols)
	marked := make(map[loc]bool, len(marks))
	for _, m := range marks {
		marked[m] = true
	}
	cell := 3
	for _, l := range s.Ranks {
		for i := lo; i < min(hi, len(l)); i++ {
			cell = max(cell, len(l[i].String())+2)
		}
	}
	label := len(fmt.Sprintf("rank %d", len(s.Ranks)-1)) + 1
	var b strings.Builder
	fmt.Fprintf(&b, "%-*s", label, "step")
	if lo > 0 {
		b.WriteString(" ...")
	}
	for i := lo; i < hi; i++ {
		fmt.Fprintf(&b, " %-*d", cell, i)
	}
	b.WriteByte('\n')
	for r, l := range s.Ranks {
		fmt.Fprintf(&b, "%-*s", label, fmt.Sprintf("rank %d", r))
		if lo > 0 {
			b.WriteString(" ...")
		}
		for i := lo; i < hi; i++ {
			txt := ""
			if i < len(l) {
				txt = " " + l[i].String() + " "
				if marked[loc{r, i}] {
					txt = "[" + l[i].String() + "]"
				}
			}
			fmt.Fprintf(&b, " %-*s", cell, txt)
		}
		if hi < len(l) {
			b.WriteString(" ...")
		}
		b.WriteByte('\n')
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	for i, ln := range lines {
		lines[i] = strings.TrimRight(ln, " ")
	}
	return strings.Join(lines, "\n")
}
