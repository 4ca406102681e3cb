package store

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Memory is an in-process Store for tests. It is safe for concurrent use.
//
// A blocked Get or Wait waits on the one key it lacks: a change wakes only
// the waiters of the key it creates, so N clients waiting while N others
// join cost O(N) wake-ups, not N on every join (the agents' rendezvous and
// the ranks' barriers).
type Memory struct {
	mu      sync.Mutex
	data    map[string][]byte
	waiters map[string]chan struct{} // per absent key: closed when it is stored
	done    chan struct{}            // closed by Close
	closed  bool
	// blocked and woken count the times a Get or Wait blocked and woke (the
	// tests check a change wakes only its own key's waiters).
	blocked, woken atomic.Int64
}

// NewMemory returns an empty in-process store.
func NewMemory() *Memory {
	return &Memory{data: map[string][]byte{}, waiters: map[string]chan struct{}{}, done: make(chan struct{})}
}

// stored wakes the waiters of key, which now exists; the caller holds mu.
func (m *Memory) stored(key string) {
	if ch, ok := m.waiters[key]; ok {
		close(ch)
		delete(m.waiters, key)
	}
}

// arrival is the channel closed when key is next stored; the caller holds mu.
func (m *Memory) arrival(key string) chan struct{} {
	ch, ok := m.waiters[key]
	if !ok {
		ch = make(chan struct{})
		m.waiters[key] = ch
	}
	return ch
}

func (m *Memory) Set(ctx context.Context, key string, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.data[key] = bytes.Clone(value)
	m.stored(key)
	return nil
}

func (m *Memory) Get(ctx context.Context, key string) ([]byte, error) {
	for {
		// Read under the same lock that finds the key, so a Delete between
		// waking and reading cannot make an absent key look empty.
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil, ErrClosed
		}
		v, ok := m.data[key]
		var ch chan struct{}
		if !ok {
			ch = m.arrival(key)
		}
		m.mu.Unlock()
		if ok {
			return bytes.Clone(v), nil
		}
		m.blocked.Add(1)
		select {
		case <-ch:
			m.woken.Add(1)
		case <-m.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("store: get %q: %w", key, ctx.Err())
		}
	}
}

func (m *Memory) Add(ctx context.Context, key string, delta int64) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, ErrClosed
	}
	var cur int64
	if v, ok := m.data[key]; ok {
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("store: add to %q: value %q is not an integer", key, v)
		}
		cur = n
	}
	cur += delta
	m.data[key] = []byte(strconv.FormatInt(cur, 10))
	m.stored(key)
	return cur, nil
}

func (m *Memory) CompareAndSet(ctx context.Context, key string, expected, desired []byte) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, false, ErrClosed
	}
	cur, ok := m.data[key]
	if (!ok && expected == nil) || (ok && expected != nil && bytes.Equal(cur, expected)) {
		m.data[key] = bytes.Clone(desired)
		m.stored(key)
		return bytes.Clone(desired), true, nil
	}
	return bytes.Clone(cur), false, nil
}

func (m *Memory) Wait(ctx context.Context, keys ...string) error {
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return ErrClosed
		}
		missing := ""
		for _, k := range keys {
			if _, ok := m.data[k]; !ok {
				missing = k
				break
			}
		}
		if missing == "" {
			m.mu.Unlock()
			return nil
		}
		ch := m.arrival(missing)
		m.mu.Unlock()
		m.blocked.Add(1)
		select {
		case <-ch:
			m.woken.Add(1)
		case <-m.done:
		case <-ctx.Done():
			return fmt.Errorf("store: wait for key %q: %w", missing, ctx.Err())
		}
	}
}

func (m *Memory) Delete(ctx context.Context, key string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false, ErrClosed
	}
	_, ok := m.data[key]
	delete(m.data, key) // waiters wait for keys to exist: none to wake
	return ok, nil
}

func (m *Memory) Count(ctx context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, ErrClosed
	}
	return int64(len(m.data)), nil
}

// Close wakes every waiter with ErrClosed.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.closed {
		m.closed = true
		close(m.done)
	}
	return nil
}

// countPrefix counts the keys that start with prefix (the TCP server's
// namespaces).
func (m *Memory) countPrefix(prefix string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, ErrClosed
	}
	var n int64
	for k := range m.data {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n, nil
}
