package ranks

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/ranks/stageloop"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/contract"
	"github.com/pplaunch/pplaunch/schedules"
	"github.com/pplaunch/pplaunch/store"
)

// record reads one record of the layout Progress documents.
func record(t *testing.T, b []byte) string {
	t.Helper()
	if binary.LittleEndian.Uint32(b) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		t.Fatalf("record's sequence numbers differ")
	}
	n := binary.LittleEndian.Uint32(b[4:])
	return string(b[8 : 8+n])
}

func TestProgressLayout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p")
	if err := os.WriteFile(path, make([]byte, contract.ProgressSize), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := OpenProgress(path)
	if err != nil {
		t.Fatal(err)
	}
	called := 0
	hook := p.Before(func(int, schedules.Action) { called++ })
	hook(3, schedules.Action{Kind: schedules.F, Stage: 1, Micro: 2})
	hook(4, schedules.Action{Kind: schedules.B, Stage: 1, Micro: 0})
	p.Failed(errors.New("disk full"), contract.FailError, -1)
	b, _ := os.ReadFile(path)
	act := strings.Fields(record(t, b[:contract.ProgressActionSize]))
	if called != 2 || len(act) != 5 || act[1] != fmt.Sprint(os.Getpid()) || strings.Join(act[2:], " ") != "step 4 1B0" {
		t.Fatalf("action record %q (hook called %d times)", act, called)
	}
	var rep struct {
		Class, Text string
		Peer        int
	}
	if err := json.Unmarshal([]byte(record(t, b[contract.ProgressActionSize:])), &rep); err != nil || rep.Class != contract.FailError || rep.Text != "disk full" || rep.Peer != -1 {
		t.Fatalf("failure record %+v, %v", rep, err)
	}
	// The agent's reader (contract.ReadProgress) reads what this writer wrote.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if action, _, fail, failed := contract.ReadProgress(f); action != "step 4 1B0" || !failed || fail.Class != contract.FailError || fail.Text != "disk full" {
		t.Fatalf("the agent's reader got %q, %+v (failed %v)", action, fail, failed)
	}
	var none *Progress // no agent: publishing is a no-op
	none.Phase("x")
	none.Failed(errors.New("x"), contract.FailError, -1)
	if none.Before(nil) != nil {
		t.Fatal("nil Progress wraps the hook")
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		err   error
		class string
		peer  int
	}{
		{&stageloop.ActionError{Peer: 2, Err: fmt.Errorf("timeout after 3s (%w)", context.DeadlineExceeded)}, contract.FailTimeout, 2},
		{&stageloop.ActionError{Peer: 1, Err: errors.New("rank 1 is gone: connection closed (process exited or aborted)")}, contract.FailPeerGone, 1},
		{fmt.Errorf("all-reduce: %w", collective.ErrAborted), contract.FailPeerGone, -1},
		// The step's all-reduce waited on rank 1 (stopped, or hung): rank 1
		// is the one to blame, as for a stage loop's receive.
		{fmt.Errorf("step 2: all-reduce of gradient norm and losses: rank 0: all-reduce sum of 57 elements (call 3): %w",
			&collective.OpError{Peer: 1, Op: "recv collective call=3 phase=0 step=0 segment=0 from rank 1", Err: fmt.Errorf("timeout after 4s (%w)", context.DeadlineExceeded)}),
			contract.FailTimeout, 1},
		{&collective.OpError{Peer: 3, Op: "recv activation chunk=0 step=1 mb=0 from rank 3", Err: errors.New("rank 3 is gone: connection closed (process exited or aborted)")},
			contract.FailPeerGone, 3},
		// This rank's own communicator, aborted or closed: no peer to blame.
		{&collective.OpError{Peer: 2, Op: "send collective call=1 phase=1 step=0 segment=0 to rank 2", Err: fmt.Errorf("%w by rank 0: NaN", collective.ErrAborted)},
			contract.FailPeerGone, -1},
		{&collective.OpError{Peer: 2, Op: "recv collective call=1 phase=1 step=0 segment=0 from rank 2", Err: errors.New("corrupt frame from rank 2: bad magic")},
			contract.FailError, 2},
		// A peer that failed on its own closes its links on the way out.
		{&stageloop.ActionError{Peer: 2, Err: errors.New("recv gradient chunk=1 step=1 mb=0 from rank 2: rank 2 closed its communicator")}, contract.FailPeerGone, 2},
		{&stageloop.ActionError{Peer: -1, Err: errors.New("NaN loss")}, contract.FailError, -1},
		{errors.New("--metrics: no space left on device"), contract.FailError, -1},
		{fmt.Errorf("communicator: %w", errors.Join(&collective.PeerError{Peer: 1, Err: fmt.Errorf("waiting for ranks [1 2] to connect: %w", context.DeadlineExceeded)},
			errors.New("refused 127.0.0.1:5: no hello"))), contract.FailTimeout, 1},
		{&collective.PeerError{Peer: 0, Err: fmt.Errorf("waiting for rank 0's training flags: %w", context.DeadlineExceeded)}, contract.FailTimeout, 0},
		{&collective.PeerError{Peer: 0, Err: errors.New("connect to rank 0 at 127.0.0.1:5: read greeting: EOF")}, contract.FailPeerGone, 0},
		{&collective.PeerError{Peer: 0, Err: fmt.Errorf("connect to rank 0 at 127.0.0.1:5: rank 0 %w", &store.RefusedError{Reason: store.WrongToken})}, contract.FailError, 0},
	}
	for _, c := range cases {
		if class, peer := Classify(c.err); class != c.class || peer != c.peer {
			t.Errorf("Classify(%v) = %s, %d; want %s, %d", c.err, class, peer, c.class, c.peer)
		}
	}
}

// BenchmarkProgressBefore is the cost the progress hook adds to every action.
func BenchmarkProgressBefore(b *testing.B) {
	path := filepath.Join(b.TempDir(), "p")
	if err := os.WriteFile(path, make([]byte, contract.ProgressSize), 0o600); err != nil {
		b.Fatal(err)
	}
	p, err := OpenProgress(path)
	if err != nil {
		b.Fatal(err)
	}
	hook := p.Before(nil)
	a := schedules.Action{Kind: schedules.F, Stage: 3, Micro: 17}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		hook(i, a)
	}
}
