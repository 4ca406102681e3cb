package store

import (
	"context"
	"errors"
)

// ErrClosed is returned by calls on a store that has been closed.
var ErrClosed = errors.New("store: closed")

// Store is a key-value store with blocking reads. Keys are strings, values bytes.
type Store interface {
	// Set stores value under key, replacing what was there, and wakes waiters.
	Set(ctx context.Context, key string, value []byte) error
	// Get returns the value of key, blocking until it exists or ctx ends.
	Get(ctx context.Context, key string) ([]byte, error)
	// Add adds delta to the decimal integer stored at key (0 if absent),
	// atomically, and returns the new value.
	Add(ctx context.Context, key string, delta int64) (int64, error)
	// CompareAndSet sets key to desired if its current value equals expected
	// (an absent key matches a nil expected). It returns the value now stored
	// and whether the swap happened.
	CompareAndSet(ctx context.Context, key string, expected, desired []byte) (current []byte, swapped bool, err error)
	// Wait blocks until every key exists or ctx ends.
	Wait(ctx context.Context, keys ...string) error
	// Delete removes key and reports whether it existed.
	Delete(ctx context.Context, key string) (bool, error)
	// Count returns the number of keys stored.
	Count(ctx context.Context) (int64, error)
	// Close releases the store (for a client: its connection).
	Close() error
}
