package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"strings"
	"sync"
	"time"
)

// storeMagic opens the store's handshake (see AcceptHandshake).
const storeMagic = "PPS2"

// Server is the TCP store: it serves one in-process Memory to every client
// that proves it holds the job's token (AcceptHandshake). Each connection has a
// namespace (asked for in its hello) that prefixes its keys, so the agents'
// keys and each restart's rank keys never meet.
//
// Every connection is accepted at once; until a client has proved the token
// the server holds at most MaxHello bytes for it, drops it if it has not
// finished its handshake within HandshakeTimeout, and caps how many wait
// from one address and in all, the oldest dropped at a cap (pending.go).
type Server struct {
	ln    net.Listener
	token string
	logf  func(format string, args ...any)
	mem   *Memory
	lim   admission
	// pending are the connections that have not proved the token yet.
	pending *Pending

	mu     sync.Mutex
	conns  map[net.Conn]bool // every open connection: true once it proved the token
	left   chan struct{}     // closed and replaced whenever a client's connection ends
	done   bool
	closed chan struct{} // closed by Close
	wg     sync.WaitGroup
}

// admission is what a server allows unauthenticated connections.
type admission struct {
	caps    PendingLimits // waiting at once
	timeout time.Duration // for each
}

var defaultAdmission = admission{caps: DefaultPendingLimits, timeout: HandshakeTimeout}

// Listen starts a store on addr ("host:port"; port 0 picks a free one) that
// accepts clients presenting token. logf receives one line per refused
// connection (nil: the standard logger).
func Listen(addr, token string, logf func(format string, args ...any)) (*Server, error) {
	if token == "" {
		return nil, errors.New("store: listen: empty token")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("store: listen on %s: %w", addr, err)
	}
	return Serve(ln, token, logf), nil
}

// Serve serves the store on ln until Close.
func Serve(ln net.Listener, token string, logf func(format string, args ...any)) *Server {
	return serve(ln, token, logf, defaultAdmission)
}

func serve(ln net.Listener, token string, logf func(format string, args ...any), lim admission) *Server {
	if logf == nil {
		logf = log.Printf
	}
	s := &Server{ln: ln, token: token, logf: logf, mem: NewMemory(), lim: lim, pending: NewPending(lim.caps),
		conns: map[net.Conn]bool{}, left: make(chan struct{}), closed: make(chan struct{})}
	s.wg.Add(1)
	go s.accept()
	return s
}

// Addr is the address the store listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops the store: it closes the listener and every connection, and
// wakes every blocked request with ErrClosed.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return nil
	}
	s.done = true
	close(s.closed)
	err := s.ln.Close()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.mem.Close()
	s.wg.Wait()
	return err
}

// WaitIdle blocks until no client is connected, or ctx ends. Connections that
// have not proved the token are not clients: they cannot hold it up. A rank that
// hosts the store calls it before Close, so the store outlives every reply
// its clients are still reading.
func (s *Server) WaitIdle(ctx context.Context) error {
	for {
		s.mu.Lock()
		n, left := 0, s.left
		for _, admitted := range s.conns {
			if admitted {
				n++
			}
		}
		s.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-left:
		case <-ctx.Done():
			return fmt.Errorf("store %s: %d clients still connected: %w", s.ln.Addr(), n, ctx.Err())
		}
	}
}

// accept accepts every connection at once and runs each one's handshake in
// a goroutine of its own, among the pending ones (whose caps drop the oldest).
func (s *Server) accept() {
	defer s.wg.Done()
	pending := s.pending
	defer pending.CloseAll()
	var backoff time.Duration
	for {
		c, err := s.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			// Out of file descriptors, a connection aborted before it was
			// accepted: the store must keep serving the job, as net/http's
			// server does, after a pause that lets descriptors free up.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.logf("store %s: accept: %v; retrying in %v", s.ln.Addr(), err, backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		s.mu.Lock()
		if s.done || !pending.Add(c) {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = false
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveClient(c, pending)
	}
}

// serveClient admits c (or refuses it, saying why in the log) and serves it.
func (s *Server) serveClient(c net.Conn, pending *Pending) {
	defer s.wg.Done()
	ns, err := s.admit(c)
	if why := pending.Done(c); why != "" {
		err = errors.New(why)
	}
	if err != nil {
		s.mu.Lock()
		closing := s.done
		s.mu.Unlock()
		if !closing { // Close cuts every handshake short: nothing refused
			s.logf("store %s: refused connection from %s: %v", s.ln.Addr(), c.RemoteAddr(), err)
		}
	} else {
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.serveConn(c, ns)
	}
	s.mu.Lock()
	delete(s.conns, c)
	if err == nil {
		close(s.left)
		s.left = make(chan struct{})
	}
	s.mu.Unlock()
	c.Close()
}

// conn is one client connection on the server side.
type conn struct {
	s      *Server
	c      net.Conn
	ns     string
	wmu    sync.Mutex
	w      *bufio.Writer
	wbuf   []byte
	cmu    sync.Mutex
	cancel map[uint64]context.CancelFunc // blocked requests, by id
}

// admit runs the handshake on c within the admission timeout; it returns
// the namespace the client asked for.
func (s *Server) admit(c net.Conn) (string, error) {
	c.SetDeadline(time.Now().Add(s.lim.timeout))
	ns, err := AcceptHandshake(c, storeMagic, s.token, nil)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "", fmt.Errorf("no complete hello within %v", s.lim.timeout)
	}
	if err != nil {
		return "", err
	}
	return string(ns), c.SetDeadline(time.Time{})
}

// connBuffer is the size of each admitted connection's read and write
// buffers. The store's requests and replies are small (a rank count, a port,
// an address); a larger value passes through in pieces. Node 0 holds one
// connection per agent and rank, so this bounds what they cost it
// (pplaunch bench rendezvous measures it).
const connBuffer = 4 << 10

// serveConn serves the requests of an admitted client. Its buffers are made
// only now, once the client has proved the token.
func (s *Server) serveConn(c net.Conn, ns string) {
	r := bufio.NewReaderSize(c, connBuffer)
	cn := &conn{s: s, c: c, ns: ns, w: bufio.NewWriterSize(c, connBuffer), cancel: map[uint64]context.CancelFunc{}}
	var buf []byte
	var err error
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	for {
		var m *msg
		m, buf, err = readMsg(r, buf)
		if err != nil {
			if errors.Is(err, errFrame) {
				s.logf("store %s: dropped connection from %s: %v", s.ln.Addr(), c.RemoteAddr(), err)
			}
			return
		}
		switch m.op {
		case opGet, opWait:
			rctx, rcancel := context.WithCancel(ctx)
			cn.cmu.Lock()
			cn.cancel[m.id] = rcancel
			cn.cmu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				rep := cn.handle(rctx, m)
				cn.cmu.Lock()
				delete(cn.cancel, m.id)
				cn.cmu.Unlock()
				rcancel()
				cn.reply(rep)
			}()
		case opCancel:
			cn.cmu.Lock()
			if f := cn.cancel[uint64(m.n)]; f != nil {
				f()
			}
			cn.cmu.Unlock()
		default:
			if cn.reply(cn.handle(ctx, m)) != nil {
				return
			}
		}
	}
}

// handle runs one request against the memory store and returns its reply.
func (cn *conn) handle(ctx context.Context, m *msg) *msg {
	rep := &msg{op: opReply, id: m.id}
	mem, key := cn.s.mem, cn.ns+m.key
	var err error
	switch m.op {
	case opSet:
		err = mem.Set(ctx, key, m.val)
	case opGet:
		rep.val, err = mem.Get(ctx, key)
	case opAdd:
		rep.n, err = mem.Add(ctx, key, m.n)
	case opCAS:
		exp := m.exp
		if m.flags&flagHasExp == 0 {
			exp = nil
		} else if exp == nil {
			exp = []byte{}
		}
		var swapped bool
		rep.val, swapped, err = mem.CompareAndSet(ctx, key, exp, m.val)
		if swapped {
			rep.flags |= flagSwapped
		}
	case opWait:
		keys := make([]string, len(m.keys))
		for i, k := range m.keys {
			keys[i] = cn.ns + k
		}
		err = mem.Wait(ctx, keys...)
	case opDelete:
		var found bool
		found, err = mem.Delete(ctx, key)
		if found {
			rep.flags |= flagFound
		}
	case opCount:
		rep.n, err = mem.countPrefix(cn.ns)
	default:
		err = fmt.Errorf("store: unexpected %s request", m.op)
	}
	if err != nil {
		rep.err = err.Error()
		if cn.ns != "" {
			rep.err = strings.ReplaceAll(rep.err, cn.ns, "")
		}
		if len(rep.err) > MaxKey {
			rep.err = rep.err[:MaxKey]
		}
		if errors.Is(err, ErrClosed) {
			rep.err = ErrClosed.Error()
		}
	}
	return rep
}

func (cn *conn) reply(m *msg) error {
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	cn.wbuf = appendMsg(cn.wbuf[:0], m)
	if _, err := cn.w.Write(cn.wbuf); err != nil {
		return err
	}
	return cn.w.Flush()
}
