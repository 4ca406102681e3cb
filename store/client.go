package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/pplaunch/pplaunch/contract"
)

// Client is a connection to a TCP store Server. It implements Store and is
// safe for concurrent use: requests are multiplexed on one connection, so a
// blocked Get does not hold up other calls.
type Client struct {
	addr string
	c    net.Conn

	wmu  sync.Mutex
	w    *bufio.Writer
	wbuf []byte

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]chan *msg
	err     error // set once the connection is gone
}

// ErrRefused is returned by Dial when the store refuses the connection (a
// wrong token).
var ErrRefused = errors.New("store refused the connection")

// retryEvery is the pause between attempts to reach a store not yet listening.
const retryEvery = 50 * time.Millisecond

// Dial connects to the store at addr, presenting token, with its keys in
// namespace ns (a prefix; "" for the root). It retries while the store is not
// reachable yet, until ctx ends; a refused token is not retried.
func Dial(ctx context.Context, addr, token, ns string) (*Client, error) {
	if len(ns) > MaxNamespace {
		return nil, fmt.Errorf("store %s: namespace of %d bytes exceeds the limit of %d", addr, len(ns), MaxNamespace)
	}
	start := time.Now()
	var last error
	for attempt := 1; ; attempt++ {
		c, err := dialOnce(ctx, addr, token, ns)
		if err == nil || errors.Is(err, ErrRefused) {
			return c, err
		}
		last = err
		t := time.NewTimer(retryEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("store %s: not reachable after %d attempts in %v: %w (last: %v)",
				addr, attempt, time.Since(start).Round(time.Millisecond), ctx.Err(), last)
		case <-t.C:
		}
	}
}

func dialOnce(ctx context.Context, addr, token, ns string) (*Client, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	} else {
		c.SetDeadline(time.Now().Add(HandshakeTimeout))
	}
	if err := DialHandshake(c, storeMagic, token, []byte(ns)); err != nil {
		c.Close()
		var ref *RefusedError
		if errors.As(err, &ref) {
			if ref.Reason == WrongToken {
				return nil, fmt.Errorf("store %s: %w: %s (every node of the job must export the same %s)", addr, ErrRefused, ref.Reason, contract.EnvToken)
			}
			return nil, fmt.Errorf("store %s: %w: %s", addr, ErrRefused, ref.Reason)
		}
		return nil, fmt.Errorf("store %s: handshake: %w", addr, err)
	}
	c.SetDeadline(time.Time{})
	cl := &Client{addr: addr, c: c, w: bufio.NewWriterSize(c, 64<<10), pending: map[uint64]chan *msg{}}
	go cl.read(bufio.NewReaderSize(c, 64<<10))
	return cl, nil
}

// Addr is the store's address.
func (cl *Client) Addr() string { return cl.addr }

// read delivers replies to their callers until the connection ends.
func (cl *Client) read(r *bufio.Reader) {
	var buf []byte
	for {
		var m *msg
		var err error
		m, buf, err = readMsg(r, buf)
		if err == nil && m.op != opReply {
			err = fmt.Errorf("%w: %s from the server", errFrame, m.op)
		}
		if err != nil {
			cl.fail(fmt.Errorf("store %s: connection lost: %w", cl.addr, err))
			return
		}
		cl.mu.Lock()
		ch := cl.pending[m.id]
		delete(cl.pending, m.id)
		cl.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

// fail ends the client: every pending and later call returns err.
func (cl *Client) fail(err error) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.err == nil {
		cl.err = err
	}
	for id, ch := range cl.pending {
		close(ch)
		delete(cl.pending, id)
	}
}

func (cl *Client) write(m *msg) error {
	if err := checkMsg(m); err != nil {
		return err
	}
	cl.wmu.Lock()
	defer cl.wmu.Unlock()
	cl.wbuf = appendMsg(cl.wbuf[:0], m)
	if len(cl.wbuf)-4 > MaxFrame {
		return fmt.Errorf("message of %d bytes exceeds the limit of %d", len(cl.wbuf)-4, MaxFrame)
	}
	if _, err := cl.w.Write(cl.wbuf); err != nil {
		return err
	}
	return cl.w.Flush()
}

// call sends m and waits for its reply or the end of ctx. what names the call
// in errors ("get \"k\"").
func (cl *Client) call(ctx context.Context, m *msg, what string) (*msg, error) {
	ch := make(chan *msg, 1)
	cl.mu.Lock()
	if cl.err != nil {
		err := cl.err
		cl.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	cl.nextID++
	m.id = cl.nextID
	cl.pending[m.id] = ch
	cl.mu.Unlock()
	start := time.Now()
	if err := cl.write(m); err != nil {
		cl.forget(m.id)
		return nil, fmt.Errorf("store %s: %s: %w", cl.addr, what, err)
	}
	select {
	case rep, ok := <-ch:
		if !ok {
			cl.mu.Lock()
			err := cl.err
			cl.mu.Unlock()
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if rep.err != "" {
			if rep.err == ErrClosed.Error() {
				return nil, fmt.Errorf("store %s: %s: %w", cl.addr, what, ErrClosed)
			}
			return nil, fmt.Errorf("store %s: %s: %s", cl.addr, what, rep.err)
		}
		return rep, nil
	case <-ctx.Done():
		cl.forget(m.id)
		if m.op == opGet || m.op == opWait {
			// Free the server's waiter; the reply, if one races this, is dropped.
			cl.write(&msg{op: opCancel, n: int64(m.id)})
		}
		return nil, fmt.Errorf("store %s: %s: %w after %v", cl.addr, what, ctx.Err(), time.Since(start).Round(time.Millisecond))
	}
}

func (cl *Client) forget(id uint64) {
	cl.mu.Lock()
	delete(cl.pending, id)
	cl.mu.Unlock()
}

func (cl *Client) Set(ctx context.Context, key string, value []byte) error {
	_, err := cl.call(ctx, &msg{op: opSet, key: key, val: value}, fmt.Sprintf("set %q", key))
	return err
}

func (cl *Client) Get(ctx context.Context, key string) ([]byte, error) {
	rep, err := cl.call(ctx, &msg{op: opGet, key: key}, fmt.Sprintf("get %q", key))
	if err != nil {
		return nil, err
	}
	return rep.val, nil
}

func (cl *Client) Add(ctx context.Context, key string, delta int64) (int64, error) {
	rep, err := cl.call(ctx, &msg{op: opAdd, key: key, n: delta}, fmt.Sprintf("add to %q", key))
	if err != nil {
		return 0, err
	}
	return rep.n, nil
}

func (cl *Client) CompareAndSet(ctx context.Context, key string, expected, desired []byte) ([]byte, bool, error) {
	m := &msg{op: opCAS, key: key, val: desired, exp: expected}
	if expected != nil {
		m.flags = flagHasExp
	}
	rep, err := cl.call(ctx, m, fmt.Sprintf("compare-and-set %q", key))
	if err != nil {
		return nil, false, err
	}
	return rep.val, rep.flags&flagSwapped != 0, nil
}

func (cl *Client) Wait(ctx context.Context, keys ...string) error {
	what := fmt.Sprintf("wait for %q", keys)
	if len(keys) == 1 {
		what = fmt.Sprintf("wait for %q", keys[0])
	}
	_, err := cl.call(ctx, &msg{op: opWait, keys: keys}, what)
	return err
}

func (cl *Client) Delete(ctx context.Context, key string) (bool, error) {
	rep, err := cl.call(ctx, &msg{op: opDelete, key: key}, fmt.Sprintf("delete %q", key))
	if err != nil {
		return false, err
	}
	return rep.flags&flagFound != 0, nil
}

// Count returns the number of keys in the client's namespace.
func (cl *Client) Count(ctx context.Context) (int64, error) {
	rep, err := cl.call(ctx, &msg{op: opCount}, "count")
	if err != nil {
		return 0, err
	}
	return rep.n, nil
}

// Close closes the connection; pending and later calls fail with ErrClosed.
func (cl *Client) Close() error {
	cl.fail(ErrClosed)
	return cl.c.Close()
}
