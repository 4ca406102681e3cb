package collective

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/pplaunch/pplaunch/cbits"
)

// fakeNCCL is an in-process stand-in for NCCL and the CUDA stream calls the
// NCCL backend makes, beside the real libraries (which need a GPU): device
// memory is host memory behind fake addresses, each stream runs its groups
// one after another, point-to-point operations pair by order per (sender,
// receiver) and run only while their group is at the head of its stream,
// exactly the rules that make NCCL deadlock or pair wrongly. Aborted
// members' operations never complete, as a dead peer's would not.
type fakeNCCL struct {
	mu      sync.Mutex
	next    uintptr
	mem     map[cbits.DevPtr][]byte
	cliques map[cbits.NCCLUniqueID]*fakeClique
	members map[cbits.NCCLComm]*fakeMember
	streams map[cbits.Stream]*fakeStream
	events  map[cbits.Event][]*fakeGroup
	splits  map[string]*fakeSplit
}

type fakeClique struct {
	n       int
	members []*fakeMember
	joined  int
	pairs   map[[2]int]*fakePair
	colls   map[int][]*fakeOp
}

type fakeMember struct {
	cl      *fakeClique // nil until a split is complete
	rank    int
	aborted bool
	err     error
	coll    int // collective calls so far
	splits  int
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

func newFakeNCCL() *fakeNCCL {
	return &fakeNCCL{next: 0x1000, mem: map[cbits.DevPtr][]byte{}, cliques: map[cbits.NCCLUniqueID]*fakeClique{},
		members: map[cbits.NCCLComm]*fakeMember{}, streams: map[cbits.Stream]*fakeStream{}, events: map[cbits.Event][]*fakeGroup{},
		splits: map[string]*fakeSplit{}}
}

// fakeRank is one rank's view (its device thread's): the group being built.
type fakeRank struct {
	f     *fakeNCCL
	group *fakeGroup
}

var errInProgress = &cbits.CUDAError{Lib: "NCCL", Call: "fake", Code: cbits.NCCLInProgress, Name: "ncclInProgress"}

func (f *fakeNCCL) handle() uintptr { f.next += 0x1000; return f.next }

func (r *fakeRank) UniqueID() (cbits.NCCLUniqueID, error) {
	var id cbits.NCCLUniqueID
	_, _ = rand.Read(id[:])
	return id, nil
}

func (r *fakeRank) CommInitRank(n int, id cbits.NCCLUniqueID, rank int, blocking bool) (cbits.NCCLComm, error) {
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
	return &fakeClique{n: n, members: make([]*fakeMember, n), pairs: map[[2]int]*fakePair{}, colls: map[int][]*fakeOp{}}
}

func (r *fakeRank) CommSplit(parent cbits.NCCLComm, color, key int, blocking bool) (cbits.NCCLComm, error) {
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

func (r *fakeRank) CommGetAsyncError(c cbits.NCCLComm) error {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	m := r.f.members[c]
	switch {
	case m == nil:
		return &cbits.CUDAError{Lib: "NCCL", Code: 4, Name: "ncclInvalidArgument"}
	case m.err != nil:
		return m.err
	case m.cl == nil || m.cl.joined < m.cl.n:
		return errInProgress
	}
	return nil
}

func (r *fakeRank) CommAbort(c cbits.NCCLComm) error {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	if m := r.f.members[c]; m != nil {
		m.aborted = true
	}
	return nil
}

func (r *fakeRank) CommDestroy(c cbits.NCCLComm) error { return r.CommAbort(c) }

func (r *fakeRank) GroupStart() error { r.group = &fakeGroup{}; return nil }

func (r *fakeRank) GroupEnd() error {
	g := r.group
	r.group = nil
	if len(g.ops) > 0 {
		r.f.mu.Lock()
		r.f.enqueue(g)
		r.f.mu.Unlock()
	}
	return nil
}

// add puts o in the open group, or in a group of its own.
func (r *fakeRank) add(c cbits.NCCLComm, s cbits.Stream, o *fakeOp) error {
	f := r.f
	f.mu.Lock()
	defer f.mu.Unlock()
	o.m = f.members[c]
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
		f.enqueue(g)
	}
	return nil
}

func (r *fakeRank) Send(buf cbits.DevPtr, n int, dt cbits.NCCLDataType, peer int, c cbits.NCCLComm, s cbits.Stream) error {
	return r.add(c, s, &fakeOp{kind: 's', peer: peer, buf: buf, bytes: n * fakeSize(dt)})
}

func (r *fakeRank) Recv(buf cbits.DevPtr, n int, dt cbits.NCCLDataType, peer int, c cbits.NCCLComm, s cbits.Stream) error {
	return r.add(c, s, &fakeOp{kind: 'r', peer: peer, buf: buf, bytes: n * fakeSize(dt)})
}

func (r *fakeRank) AllReduce(send, recv cbits.DevPtr, n int, dt cbits.NCCLDataType, op cbits.NCCLRedOp, c cbits.NCCLComm, s cbits.Stream) error {
	return r.add(c, s, &fakeOp{kind: 'a', buf: recv, bytes: n * fakeSize(dt), dt: dt, red: op})
}

func (r *fakeRank) Broadcast(send, recv cbits.DevPtr, n int, dt cbits.NCCLDataType, root int, c cbits.NCCLComm, s cbits.Stream) error {
	return r.add(c, s, &fakeOp{kind: 'b', buf: recv, bytes: n * fakeSize(dt), root: root})
}

func fakeSize(dt cbits.NCCLDataType) int {
	switch dt {
	case cbits.NCCLFloat32:
		return 4
	case cbits.NCCLFloat64:
		return 8
	}
	return 1
}

func (f *fakeNCCL) enqueue(g *fakeGroup) {
	g.stream.queue = append(g.stream.queue, g)
	f.progress()
}

// progress posts the head group of every stream and pairs what can be
// paired, until nothing changes.
func (f *fakeNCCL) progress() {
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
func (f *fakeNCCL) post(o *fakeOp) {
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
			copy(f.mem[r.buf][:r.bytes], f.mem[s.buf][:s.bytes])
			s.done, r.done = true, true
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
// for reductions, enough for the tests).
func (f *fakeNCCL) collective(ops []*fakeOp) {
	sort.Slice(ops, func(a, b int) bool { return ops[a].m.rank < ops[b].m.rank })
	if ops[0].kind == 'b' {
		src := f.mem[ops[ops[0].root].buf]
		for _, o := range ops {
			copy(f.mem[o.buf][:o.bytes], src[:o.bytes])
			o.done = true
		}
		return
	}
	n := ops[0].bytes / 4
	acc := make([]float32, n)
	for i := range n {
		for k, o := range ops {
			v := math.Float32frombits(binary.LittleEndian.Uint32(f.mem[o.buf][4*i:]))
			switch {
			case k == 0:
				acc[i] = v
			case ops[0].red == cbits.NCCLMax:
				acc[i] = max(acc[i], v)
			default:
				acc[i] += v
			}
		}
		if ops[0].red == cbits.NCCLAvg {
			acc[i] /= float32(len(ops))
		}
	}
	for _, o := range ops {
		for i, v := range acc {
			binary.LittleEndian.PutUint32(f.mem[o.buf][4*i:], math.Float32bits(v))
		}
		o.done = true
	}
}

func (r *fakeRank) StreamCreate() (cbits.Stream, error) {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	s := cbits.Stream(r.f.handle())
	r.f.streams[s] = &fakeStream{}
	return s, nil
}

func (r *fakeRank) StreamDestroy(s cbits.Stream) error { return nil }

func (r *fakeRank) EventCreate() (cbits.Event, error) {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	return cbits.Event(r.f.handle()), nil
}

func (r *fakeRank) EventDestroy(e cbits.Event) error { return nil }

func (r *fakeRank) EventRecord(e cbits.Event, s cbits.Stream) error {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	r.f.events[e] = append([]*fakeGroup(nil), r.f.streams[s].queue...)
	return nil
}

func (r *fakeRank) EventQuery(e cbits.Event) (bool, error) {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	for _, g := range r.f.events[e] {
		if !g.done {
			return false, nil
		}
	}
	return true, nil
}

// StreamWaitEvent: the fake's compute stream never has work, so there is
// nothing to wait for.
func (r *fakeRank) StreamWaitEvent(s cbits.Stream, e cbits.Event) error { return nil }

func (r *fakeRank) Malloc(n int) (cbits.DevPtr, error) {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	p := cbits.DevPtr(r.f.handle())
	r.f.mem[p] = make([]byte, n)
	return p, nil
}

func (r *fakeRank) Free(p cbits.DevPtr) error { return nil }

// upload and download copy float32 values to and from fake device memory.
func (f *fakeNCCL) upload(v []float32) cbits.DevPtr {
	r := &fakeRank{f: f}
	p, _ := r.Malloc(4 * len(v))
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, x := range v {
		binary.LittleEndian.PutUint32(f.mem[p][4*i:], math.Float32bits(x))
	}
	return p
}

func (f *fakeNCCL) download(p cbits.DevPtr, n int) []float32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(f.mem[p][4*i:]))
	}
	return out
}

// failAll sets an asynchronous error on every member, as NCCL does when a
// peer's connection breaks.
func (f *fakeNCCL) failAll(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.members {
		m.err = err
	}
}

// fakeDevice is a device thread for the fake: one goroutine, one stream.
type fakeDevice struct {
	work   chan func()
	stream cbits.Stream
}

func newFakeDevice(r *fakeRank) *fakeDevice {
	d := &fakeDevice{work: make(chan func())}
	d.stream, _ = r.StreamCreate()
	go func() {
		for f := range d.work {
			f()
		}
	}()
	return d
}

func (d *fakeDevice) Call(f func() error) error {
	done := make(chan error, 1)
	d.work <- func() { done <- f() }
	return <-done
}

func (d *fakeDevice) ComputeStream() uintptr { return uintptr(d.stream) }
func (d *fakeDevice) stop()                  { close(d.work) }
