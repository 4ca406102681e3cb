package store

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// Memory is an in-process Store for tests. It is safe for concurrent use.
type Memory struct {
	mu     sync.Mutex
	data   map[string][]byte
	change chan struct{} // closed and replaced on every change, to wake waiters
	closed bool
}

// NewMemory returns an empty in-process store.
func NewMemory() *Memory {
	return &Memory{data: map[string][]byte{}, change: make(chan struct{})}
}

// notify wakes every waiter; the caller holds mu.
func (m *Memory) notify() {
	close(m.change)
	m.change = make(chan struct{})
}

func (m *Memory) Set(ctx context.Context, key string, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.data[key] = bytes.Clone(value)
	m.notify()
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
		ch := m.change
		m.mu.Unlock()
		if ok {
			return bytes.Clone(v), nil
		}
		select {
		case <-ch:
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
	m.notify()
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
		m.notify()
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
		ch := m.change
		m.mu.Unlock()
		if missing == "" {
			return nil
		}
		select {
		case <-ch:
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
	delete(m.data, key)
	if ok {
		m.notify()
	}
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
		m.notify()
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
