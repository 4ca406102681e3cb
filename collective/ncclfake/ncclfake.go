// Package ncclfake is an in-process stand-in for NCCL and the few CUDA
// stream, event and memory calls the NCCL backend of package collective
// makes (collective.NCCLAPI), for tests on machines without a GPU. Device
// memory is a Memory: host memory behind fake addresses (HostMemory), or a
// CUDA emulator's device memory, so that a CUDA tensor backend's tensors go
// through it as they would go through NCCL.
//
// Only tests import it. It imports only cbits: collective's own tests use it,
// so it must never import collective (nor anything that builds on it).
package ncclfake

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/pplaunch/pplaunch/cbits"
)

// NCCL is the fake: one per test, shared by the ranks of a world. Each
// stream runs its groups one after another, point-to-point operations pair
// by order per (sender, receiver) and run only while their group is at the
// head of its stream,
// exactly the rules that make NCCL deadlock or pair wrongly. Aborted
// members' operations never complete, as a dead peer's would not.
//
// As real non-blocking communicators do, the first use of each connection
// (a sender and receiver pair, or a communicator's collectives) makes
// GroupEnd, or the call outside a group, return ncclInProgress; the
// communicator then stays in progress (CommGetAsyncError) until every peer
// of those connections has used it too, and any other call on it meanwhile
// is ncclInvalidUsage.
type NCCL struct {
	mu      sync.Mutex
	next    uintptr
	mem     Memory
	cliques map[cbits.NCCLUniqueID]*fakeClique
	members map[cbits.NCCLComm]*fakeMember
	streams map[cbits.Stream]*fakeStream
	events  map[cbits.Event][]*fakeGroup
	splits  map[string]*fakeSplit
	matched int                          // point-to-point pairs completed
	moved   map[cbits.NCCLDataType]int64 // bytes of the sends of those pairs, by datatype
	pending int                          // calls answered ncclInProgress at a connection's first use
}

type fakeClique struct {
	n       int
	members []*fakeMember
	joined  int
	pairs   map[[2]int]*fakePair
	colls   map[int][]*fakeOp
	sides   map[[2]int]map[int]bool // connection (sender, receiver; collConn for collectives) -> members that used it
}

// collConn is the connection key of a clique's collectives.
var collConn = [2]int{-1, -1}

type fakeMember struct {
	cl      *fakeClique // nil until a split is complete
	rank    int
	aborted bool
	err     error
	coll    int // collective calls so far
	splits  int
	setting [][2]int // connections this member's last call set up, until every peer has used them
}

type fakePair struct{ sends, recvs []*fakeOp }

type fakeOp struct {
	m          *fakeMember
	kind       byte // 's', 'r', 'a' (all-reduce), 'b' (broadcast)
	peer       int
	buf        cbits.DevPtr
	bytes      int
	dt         cbits.NCCLDataType
	red        cbits.NCCLRedOp
	root, seq  int
	done, post bool
}

type fakeGroup struct {
	ops    []*fakeOp
	stream *fakeStream
	done   bool
}

type fakeStream struct{ queue []*fakeGroup }

type fakeSplit struct {
	parent  *fakeClique
	callers map[int][2]int // parent rank -> color, key
	news    map[int]*fakeMember
}

// New makes a fake whose device memory is mem (nil: a new HostMemory).
func New(mem Memory) *NCCL {
	if mem == nil {
		mem = NewHostMemory()
	}
	return &NCCL{mem: mem, next: 0x1000, cliques: map[cbits.NCCLUniqueID]*fakeClique{},
		members: map[cbits.NCCLComm]*fakeMember{}, streams: map[cbits.Stream]*fakeStream{}, events: map[cbits.Event][]*fakeGroup{},
		splits: map[string]*fakeSplit{}}
}

// Rank is one rank's collective.NCCLAPI (its device thread's): the group
// being built.
type Rank struct {
	f     *NCCL
	group *fakeGroup
}

// Rank returns a new rank's API, for collective.NCCLOptions.API.
func (f *NCCL) Rank() *Rank { return &Rank{f: f} }

var errInProgress = &cbits.CUDAError{Lib: "NCCL", Call: "fake", Code: cbits.NCCLInProgress, Name: "ncclInProgress"}

func (f *NCCL) handle() uintptr { f.next += 0x1000; return f.next }

func (r *Rank) UniqueID() (cbits.NCCLUniqueID, error) {
	var id cbits.NCCLUniqueID
	_, _ = rand.Read(id[:])
	return id, nil
}

func (r *Rank) CommInitRank(n int, id cbits.NCCLUniqueID, rank int, blocking bool) (cbits.NCCLComm, error) {
	f := r.f
	f.mu.Lock()
	defer f.mu.Unlock()
	cl := f.cliques[id]
	if cl == nil {
		cl = newFakeClique(n)
		f.cliques[id] = cl
	}
	m := &fakeMember{cl: cl, rank: rank}
	cl.members[rank] = m
	cl.joined++
	h := cbits.NCCLComm(f.handle())
	f.members[h] = m
	return h, errInProgress
}

func newFakeClique(n int) *fakeClique {
	return &fakeClique{n: n, members: make([]*fakeMember, n), pairs: map[[2]int]*fakePair{}, colls: map[int][]*fakeOp{},
		sides: map[[2]int]map[int]bool{}}
}

func (r *Rank) CommSplit(parent cbits.NCCLComm, color, key int, blocking bool) (cbits.NCCLComm, error) {
	f := r.f
	f.mu.Lock()
	defer f.mu.Unlock()
	pm := f.members[parent]
	k := fmt.Sprintf("%p/%d", pm.cl, pm.splits)
	pm.splits++
	sp := f.splits[k]
	if sp == nil {
		sp = &fakeSplit{parent: pm.cl, callers: map[int][2]int{}, news: map[int]*fakeMember{}}
		f.splits[k] = sp
	}
	m := &fakeMember{}
	sp.callers[pm.rank], sp.news[pm.rank] = [2]int{color, key}, m
	h := cbits.NCCLComm(f.handle())
	f.members[h] = m
	if len(sp.callers) == sp.parent.n {
		byColor := map[int][]int{}
		for pr, ck := range sp.callers {
			byColor[ck[0]] = append(byColor[ck[0]], pr)
		}
		for _, prs := range byColor {
			sort.Slice(prs, func(a, b int) bool { return sp.callers[prs[a]][1] < sp.callers[prs[b]][1] })
			cl := newFakeClique(len(prs))
			for i, pr := range prs {
				nm := sp.news[pr]
				nm.cl, nm.rank = cl, i
				cl.members[i] = nm
			}
			cl.joined = len(prs)
		}
	}
	return h, errInProgress
}

func (r *Rank) CommGetAsyncError(c cbits.NCCLComm) error {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	m := r.f.members[c]
	switch {
	case m == nil:
		return &cbits.CUDAError{Lib: "NCCL", Code: 4, Name: "ncclInvalidArgument"}
	case m.err != nil:
		return m.err
	case m.cl == nil || m.cl.joined < m.cl.n || !m.settled():
		return errInProgress
	}
	return nil
}

// connect notes that m uses connection c, and says whether that is m's first
// use of it (NCCL then sets it up, in progress until every peer has used it).
func (m *fakeMember) connect(c [2]int) bool {
	cl := m.cl
	s := cl.sides[c]
	if s == nil {
		s = map[int]bool{}
		cl.sides[c] = s
	}
	first := !s[m.rank]
	s[m.rank] = true
	if first {
		m.setting = append(m.setting, c)
	}
	return first
}

// settled says whether every connection m's last call set up has all its
// peers; it forgets those that have.
func (m *fakeMember) settled() bool {
	cl := m.cl
	for len(m.setting) > 0 {
		c := m.setting[0]
		need := cl.n
		if c != collConn {
			need = 2
			if c[0] == c[1] {
				need = 1
			}
		}
		if len(cl.sides[c]) < need {
			return false
		}
		m.setting = m.setting[1:]
	}
	return true
}

// conn is the connection o uses.
func (o *fakeOp) conn() [2]int {
	switch o.kind {
	case 's':
		return [2]int{o.m.rank, o.peer}
	case 'r':
		return [2]int{o.peer, o.m.rank}
	}
	return collConn
}

// errBusy is NCCL's answer to a call on a communicator still in progress.
var errBusy = &cbits.CUDAError{Lib: "NCCL", Call: "fake", Code: cbits.NCCLInvalidUsage, Name: "ncclInvalidUsage",
	Message: "a call on a communicator whose last operation is still in progress (poll ncclCommGetAsyncError until it is done)"}

func (r *Rank) CommAbort(c cbits.NCCLComm) error {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	if m := r.f.members[c]; m != nil {
		m.aborted = true
	}
	return nil
}

func (r *Rank) CommDestroy(c cbits.NCCLComm) error { return r.CommAbort(c) }

func (r *Rank) GroupStart() error { r.group = &fakeGroup{}; return nil }

func (r *Rank) GroupEnd() error {
	g := r.group
	r.group = nil
	if len(g.ops) == 0 {
		return nil
	}
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	return r.f.enqueue(g)
}

// add puts o in the open group, or in a group of its own.
func (r *Rank) add(c cbits.NCCLComm, s cbits.Stream, o *fakeOp) error {
	f := r.f
	f.mu.Lock()
	defer f.mu.Unlock()
	o.m = f.members[c]
	if !o.m.settled() {
		return errBusy
	}
	g := r.group
	if g == nil {
		g = &fakeGroup{}
	}
	g.ops = append(g.ops, o)
	g.stream = f.streams[s]
	if o.kind == 'a' || o.kind == 'b' {
		o.seq = o.m.coll
		o.m.coll++
	}
	if r.group == nil {
		return f.enqueue(g)
	}
	return nil
}

func (r *Rank) Send(buf cbits.DevPtr, n int, dt cbits.NCCLDataType, peer int, c cbits.NCCLComm, s cbits.Stream) error {
	return r.add(c, s, &fakeOp{kind: 's', peer: peer, buf: buf, bytes: n * fakeSize(dt), dt: dt})
}

func (r *Rank) Recv(buf cbits.DevPtr, n int, dt cbits.NCCLDataType, peer int, c cbits.NCCLComm, s cbits.Stream) error {
	return r.add(c, s, &fakeOp{kind: 'r', peer: peer, buf: buf, bytes: n * fakeSize(dt)})
}

func (r *Rank) AllReduce(send, recv cbits.DevPtr, n int, dt cbits.NCCLDataType, op cbits.NCCLRedOp, c cbits.NCCLComm, s cbits.Stream) error {
	return r.add(c, s, &fakeOp{kind: 'a', buf: recv, bytes: n * fakeSize(dt), dt: dt, red: op})
}

func (r *Rank) Broadcast(send, recv cbits.DevPtr, n int, dt cbits.NCCLDataType, root int, c cbits.NCCLComm, s cbits.Stream) error {
	return r.add(c, s, &fakeOp{kind: 'b', buf: recv, bytes: n * fakeSize(dt), root: root})
}

func fakeSize(dt cbits.NCCLDataType) int {
	switch dt {
	case cbits.NCCLFloat32:
		return 4
	case cbits.NCCLFloat64:
		return 8
	case cbits.NCCLBfloat16:
		return 2
	}
	return 1
}

// enqueue queues g on its stream, and returns ncclInProgress when one of its
// operations is its member's first use of a connection.
func (f *NCCL) enqueue(g *fakeGroup) error {
	first := false
	for _, o := range g.ops {
		if o.m.connect(o.conn()) {
			first = true
		}
	}
	g.stream.queue = append(g.stream.queue, g)
	f.progress()
	if first {
		f.pending++
		return errInProgress
	}
	return nil
}

// InProgress is how many calls the fake has answered ncclInProgress because
// they used a connection for the first time.
func (f *NCCL) InProgress() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pending
}

// progress posts the head group of every stream and pairs what can be
// paired, until nothing changes.
func (f *NCCL) progress() {
	for moved := true; moved; {
		moved = false
		for _, s := range f.streams {
			for len(s.queue) > 0 {
				g := s.queue[0]
				for _, o := range g.ops {
					if !o.post && !o.m.aborted {
						o.post, moved = true, true
						f.post(o)
					}
				}
				if !fakeAllDone(g.ops) {
					break
				}
				g.done, s.queue, moved = true, s.queue[1:], true
			}
		}
	}
}

func fakeAllDone(ops []*fakeOp) bool {
	for _, o := range ops {
		if !o.done {
			return false
		}
	}
	return true
}

// post files o and completes whatever it pairs with.
func (f *NCCL) post(o *fakeOp) {
	cl := o.m.cl
	switch o.kind {
	case 's', 'r':
		from, to := o.m.rank, o.peer
		if o.kind == 'r' {
			from, to = o.peer, o.m.rank
		}
		p := cl.pairs[[2]int{from, to}]
		if p == nil {
			p = &fakePair{}
			cl.pairs[[2]int{from, to}] = p
		}
		if o.kind == 's' {
			p.sends = append(p.sends, o)
		} else {
			p.recvs = append(p.recvs, o)
		}
		for len(p.sends) > 0 && len(p.recvs) > 0 {
			s, r := p.sends[0], p.recvs[0]
			p.sends, p.recvs = p.sends[1:], p.recvs[1:]
			if s.m.aborted || r.m.aborted {
				continue
			}
			if err := f.mem.Copy(r.buf, s.buf, min(r.bytes, s.bytes)); err != nil {
				s.m.err, r.m.err = err, err
				continue
			}
			s.done, r.done = true, true
			f.matched++
			if f.moved == nil {
				f.moved = map[cbits.NCCLDataType]int64{}
			}
			f.moved[s.dt] += int64(s.bytes)
		}
	default:
		ops := append(cl.colls[o.seq], o)
		cl.colls[o.seq] = ops
		if len(ops) == cl.n {
			f.collective(ops)
		}
	}
}

// collective runs one all-reduce or broadcast of every member (float32 only
// for reductions, enough for the tests). A memory failure fails the members.
func (f *NCCL) collective(ops []*fakeOp) {
	sort.Slice(ops, func(a, b int) bool { return ops[a].m.rank < ops[b].m.rank })
	err := f.reduce(ops)
	for _, o := range ops {
		if err != nil {
			o.m.err = err
			continue
		}
		o.done = true
	}
}

func (f *NCCL) reduce(ops []*fakeOp) error {
	if ops[0].kind == 'b' {
		src := ops[ops[0].root]
		for _, o := range ops {
			if o != src {
				if err := f.mem.Copy(o.buf, src.buf, o.bytes); err != nil {
					return err
				}
			}
		}
		return nil
	}
	n := ops[0].bytes / 4
	acc := make([]float32, n)
	b := make([]byte, ops[0].bytes)
	for k, o := range ops {
		if err := f.mem.Read(o.buf, b); err != nil {
			return err
		}
		for i := range n {
			v := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			switch {
			case k == 0:
				acc[i] = v
			case ops[0].red == cbits.NCCLMax:
				acc[i] = max(acc[i], v)
			default:
				acc[i] += v
			}
		}
	}
	for i := range acc {
		if ops[0].red == cbits.NCCLAvg {
			acc[i] /= float32(len(ops))
		}
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(acc[i]))
	}
	for _, o := range ops {
		if err := f.mem.Write(o.buf, b); err != nil {
			return err
		}
	}
	return nil
}

func (r *Rank) StreamCreate() (cbits.Stream, error) {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	s := cbits.Stream(r.f.handle())
	r.f.streams[s] = &fakeStream{}
	return s, nil
}

func (r *Rank) StreamDestroy(s cbits.Stream) error { return nil }

func (r *Rank) EventCreate() (cbits.Event, error) {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	return cbits.Event(r.f.handle()), nil
}

func (r *Rank) EventDestroy(e cbits.Event) error { return nil }

// EventRecord on a stream of the fake's notes the groups queued on it; on
// another (the device's compute stream) it waits for that stream's work
// (Memory.Await), so that the transfers issued after it, which on NCCL
// would wait for the event on the device, move what that work wrote.
func (r *Rank) EventRecord(e cbits.Event, s cbits.Stream) error {
	r.f.mu.Lock()
	fs := r.f.streams[s]
	r.f.mu.Unlock()
	if fs == nil {
		if err := r.f.mem.Await(s); err != nil {
			return err
		}
		r.f.mu.Lock()
		r.f.events[e] = nil // done
		r.f.mu.Unlock()
		return nil
	}
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	r.f.events[e] = append([]*fakeGroup(nil), fs.queue...)
	return nil
}

func (r *Rank) EventQuery(e cbits.Event) (bool, error) {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	for _, g := range r.f.events[e] {
		if !g.done {
			return false, nil
		}
	}
	return true, nil
}

// StreamWaitEvent has nothing to do: the fake's streams start a group's
// operations only once it is at their head, and an event of another stream
// was waited for when it was recorded.
func (r *Rank) StreamWaitEvent(s cbits.Stream, e cbits.Event) error { return nil }

func (r *Rank) Malloc(n int) (cbits.DevPtr, error) { return r.f.mem.Malloc(n) }
func (r *Rank) Free(p cbits.DevPtr) error          { return r.f.mem.Free(p) }

// Upload copies float32 values to new device memory of the fake's Memory.
func (f *NCCL) Upload(v []float32) cbits.DevPtr {
	p, err := f.mem.Malloc(4 * len(v))
	if err != nil {
		panic(err)
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	if err := f.mem.Write(p, b); err != nil {
		panic(err)
	}
	return p
}

// Download reads n float32 values from device memory at p.
func (f *NCCL) Download(p cbits.DevPtr, n int) []float32 {
	b := make([]byte, 4*n)
	f.mu.Lock()
	err := f.mem.Read(p, b)
	f.mu.Unlock()
	if err != nil {
		panic(err)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// Pairs is how many sends have met their receives so far.
func (f *NCCL) Pairs() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.matched
}

// Moved is how many bytes the sends that met their receives carried, by
// datatype.
func (f *NCCL) Moved(dt cbits.NCCLDataType) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.moved[dt]
}

// FailAll sets an asynchronous error on every member, as NCCL does when a
// peer's connection breaks.
func (f *NCCL) FailAll(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.members {
		m.err = err
	}
}
