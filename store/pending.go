package store

import (
	"container/list"
	"fmt"
	"net"
	"sync"
)

// What a listener (the store, a rank's link listener) allows connections
// that have not proved the job's token. It accepts every connection at once,
// so a peer holding the token is greeted at once however many others stay
// silent, and bounds what each unauthenticated one costs instead: a
// goroutine, the MaxHello bytes of its hello, its handshake's deadline
// (HandshakeTimeout), and a cap on how many wait at once from one source
// address (MaxPendingPerSource) and in all (MaxPending). A connection over a
// cap drops the oldest waiting one (of its source, or of all): a silent peer
// ages, a real one proves the token within a round trip, so whoever keeps
// reconnecting only pushes out its own older connections. A dropped store
// client dials again; a rank's link listener raises the caps to hold every
// peer that dials it (PendingLimits.AtLeast), since a rank dials its link
// once.
const (
	// MaxPendingPerSource bounds the connections from one address waiting
	// to prove the token. Every rank of a node dials from the node's address,
	// thousands at once on one host (pplaunch bench rendezvous), each for a
	// round trip: the cap is above what they hold at a time. What an
	// unauthenticated connection costs (a goroutine of a few KiB and a socket)
	// bounds what one address can make a listener hold to tens of MiB.
	MaxPendingPerSource = 4096
	// MaxPending bounds the connections waiting to prove the token in all.
	MaxPending = 4 * MaxPendingPerSource
)

// PendingLimits are the caps of a Pending.
type PendingLimits struct{ PerSource, Total int }

// DefaultPendingLimits are MaxPendingPerSource and MaxPending.
var DefaultPendingLimits = PendingLimits{PerSource: MaxPendingPerSource, Total: MaxPending}

// AtLeast returns the limits raised, where they are lower, to hold n
// connections from one source and in all: a listener that knows how many
// peers dial it at once (a rank's link listener) never drops one of them.
func (l PendingLimits) AtLeast(n int) PendingLimits {
	return PendingLimits{PerSource: max(l.PerSource, n), Total: max(l.Total, n)}
}

// evictFor is the admission decision: with fromSource connections waiting
// from the new connection's source and total in all, which waiting one the
// new connection drops: the oldest of its source, the oldest of all, or none.
func evictFor(fromSource, total int, lim PendingLimits) (evict evictKind) {
	switch {
	case fromSource >= lim.PerSource:
		return evictOldestOfSource
	case total >= lim.Total:
		return evictOldest
	}
	return evictNone
}

type evictKind int

const (
	evictNone evictKind = iota
	evictOldestOfSource
	evictOldest
)

// Pending is the set of a listener's connections that have not proved the
// token yet, oldest first. Its zero value is not ready: NewPending.
type Pending struct {
	mu       sync.Mutex
	lim      PendingLimits
	order    *list.List // of *pendingConn, oldest first
	at       map[net.Conn]*list.Element
	bySource map[string]int
	dropped  map[net.Conn]string // why a connection was dropped
	closed   bool
}

type pendingConn struct {
	c   net.Conn
	src string
}

// NewPending returns an empty set with caps lim.
func NewPending(lim PendingLimits) *Pending {
	return &Pending{lim: lim, order: list.New(), at: map[net.Conn]*list.Element{}, bySource: map[string]int{}, dropped: map[net.Conn]string{}}
}

// source is the address a connection comes from, without its port.
func source(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return c.RemoteAddr().String()
}

// Add registers c, dropping (closing) the connection the caps make it
// replace. It returns false once the set is closed: c must then be closed.
func (p *Pending) Add(c net.Conn) bool {
	src := source(c)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	switch evictFor(p.bySource[src], p.order.Len(), p.lim) {
	case evictOldestOfSource:
		for e := p.order.Front(); e != nil; e = e.Next() {
			if e.Value.(*pendingConn).src == src {
				p.drop(e, fmt.Sprintf("dropped: %d connections from %s were waiting to prove the job token, the most one address may hold; the oldest goes", p.lim.PerSource, src))
				break
			}
		}
	case evictOldest:
		p.drop(p.order.Front(), fmt.Sprintf("dropped: %d connections were waiting to prove the job token, the most a listener holds; the oldest goes", p.lim.Total))
	}
	p.at[c] = p.order.PushBack(&pendingConn{c: c, src: src})
	p.bySource[src]++
	return true
}

// drop closes a waiting connection, remembering why for Done.
func (p *Pending) drop(e *list.Element, why string) {
	o := e.Value.(*pendingConn)
	p.dropped[o.c] = why
	p.remove(e)
	o.c.Close()
}

func (p *Pending) remove(e *list.Element) {
	o := p.order.Remove(e).(*pendingConn)
	delete(p.at, o.c)
	if p.bySource[o.src]--; p.bySource[o.src] == 0 {
		delete(p.bySource, o.src)
	}
}

// Done ends c's wait (its handshake ended). It returns why c was dropped,
// "" if it was not: a dropped connection's handshake fails on its closed
// socket, and the reason is what to log.
func (p *Pending) Done(c net.Conn) (dropped string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if why, ok := p.dropped[c]; ok {
		delete(p.dropped, c)
		return why
	}
	if e := p.at[c]; e != nil {
		p.remove(e)
	}
	return ""
}

// Len is the number of connections waiting.
func (p *Pending) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.order.Len()
}

// CloseAll closes every waiting connection and refuses later ones (Add
// returns false).
func (p *Pending) CloseAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for e := p.order.Front(); e != nil; e = e.Next() {
		e.Value.(*pendingConn).c.Close()
	}
}
