package cbits

import (
	"errors"
	"strings"
	"testing"
)

// TestThread: closures run in submission order on the thread; an enqueued
// closure's error, named, is what every later Call returns; an init error
// is StartThread's.
func TestThread(t *testing.T) {
	if _, err := StartThread(0, func() error { return errors.New("no device") }); err == nil || err.Error() != "no device" {
		t.Fatalf("init error: %v", err)
	}
	th, err := StartThread(4, func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer th.Stop()
	var got []int
	for i := range 3 {
		th.Enqueue("step", func() error { got = append(got, i); return nil })
	}
	if err := th.Call(func() error { got = append(got, 3); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0] != 0 || got[1] != 1 || got[2] != 2 || got[3] != 3 {
		t.Fatalf("order %v, want 0 1 2 3", got)
	}
	if err := th.Call(func() error { return errors.New("own") }); err == nil || err.Error() != "own" {
		t.Fatalf("Call's own error: %v", err)
	}
	th.Enqueue("launch gelu", func() error { return errors.New("illegal address") })
	for range 2 {
		if err := th.Call(func() error { return nil }); err == nil || !strings.Contains(err.Error(), "launch gelu: illegal address") {
			t.Fatalf("after a failed enqueue: %v", err)
		}
	}
}
