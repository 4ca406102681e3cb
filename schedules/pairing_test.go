package schedules

import (
	"errors"
	"strings"
	"testing"
)

// TestPairingGenerated: every generated schedule, over a grid of P, M and v,
// keeps NCCL's pairing rules both when each transfer is issued on its own
// (as the executor does with Isend/Irecv) and when runs of transfers are
// batched.
func TestPairingGenerated(t *testing.T) {
	n := 0
	for _, name := range Names {
		for p := 1; p <= 6; p++ {
			for _, m := range []int{1, 2, 3, 4, 5, 8, 12} {
				for _, v := range []int{0, 2, 3, 4} {
					s, err := Generate(name, p, m, v)
					if err != nil {
						continue // combination refused by Resolve or the generator
					}
					n++
					for gname, g := range map[string]Grouping{"singly": Singly, "runs": TransferRuns} {
						if err := CheckPairing(s, g); err != nil {
							t.Fatalf("%s p=%d m=%d v=%d (%s): %v\n%s", name, p, m, v, gname, err, Format(s))
						}
					}
				}
			}
		}
	}
	if n < 100 {
		t.Fatalf("only %d schedules generated: the grid is not exercised", n)
	}
}

func mustParse(t *testing.T, text string) *Schedule {
	t.Helper()
	s, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPairingBadOrder: rank 0 sends micro-batch 0 then 1, rank 1 receives 1
// then 0. The rendezvous dry run would only call this a deadlock; NCCL
// would pair 0 with 1, and the error says so, naming both transfers.
func TestPairingBadOrder(t *testing.T) {
	s := &Schedule{P: 2, V: 1, M: 2, Placement: []int{0, 1}, Ranks: [][]Action{
		{{F, 0, 0}, {SendF, 0, 0}, {F, 0, 1}, {SendF, 0, 1}},
		{{RecvF, 1, 1}, {RecvF, 1, 0}, {F, 1, 1}, {F, 1, 0}},
	}}
	err := CheckPairing(s, TransferRuns)
	var pe *PairingError
	if !errors.As(err, &pe) {
		t.Fatalf("got %v, want a PairingError", err)
	}
	for _, want := range []string{"rank 0's send #1 to rank 1 is 0SEND_F0 (step 1)", "rank 1's receive #1 from rank 0 is 1RECV_F1 (step 0)", "same order on both"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestPairingMissingPartner: a send with no receive on the other side.
func TestPairingMissingPartner(t *testing.T) {
	s := &Schedule{P: 2, V: 1, M: 1, Placement: []int{0, 1}, Ranks: [][]Action{
		{{F, 0, 0}, {SendF, 0, 0}},
		{{F, 1, 0}},
	}}
	err := CheckPairing(s, Singly)
	if err == nil || !strings.Contains(err.Error(), "rank 1's receive #1 from rank 0 is no receive") {
		t.Fatalf("got %v", err)
	}
}

// facing is the 1F1B steady state written with a send and a receive facing
// each other on both ranks: rank 0 sends mb1 then receives mb0's gradient,
// rank 1 sends mb0's gradient then receives mb1.
const facing = `
0F0, 0SEND_F0, 0F1, 0SEND_F1, 0RECV_B0, 0B0, 0RECV_B1, 0B1
1RECV_F0, 1F0, 1B0, 1SEND_B0, 1RECV_F1, 1F1, 1B1, 1SEND_B1
`

// TestPairingFacingNeedsGroup: issued singly, the facing send and receive
// deadlock on NCCL's streams (each rank's stream is stuck in its send); in
// one group, as TransferRuns batches them, they pass.
func TestPairingFacingNeedsGroup(t *testing.T) {
	s := mustParse(t, facing)
	if err := CheckPairing(s, TransferRuns); err != nil {
		t.Fatalf("grouped: %v", err)
	}
	err := CheckPairing(s, Singly)
	var de *DeadlockError
	if !errors.As(err, &de) {
		t.Fatalf("singly: got %v, want a DeadlockError", err)
	}
	for _, want := range []string{"pairs transfers by order (NCCL", "rank 0 step 3 0SEND_F1 waits for rank 1 to post 1RECV_F1", "rank 1 step 3 1SEND_B0 waits for rank 0 to post 0RECV_B0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// TestPairingHostBlocks: rank 0's host blocks at its backward for a
// gradient that rank 1 sends only after the activation that rank 0 would
// send after that backward. Grouping cannot help: the error names both
// stuck transfers and where each peer's host is blocked.
func TestPairingHostBlocks(t *testing.T) {
	s := mustParse(t, `
0RECV_B0, 0F0, 0B0, 0SEND_F0
1RECV_F0, 1F0, 1B0, 1SEND_B0
`)
	for _, g := range []Grouping{Singly, TransferRuns} {
		err := CheckPairing(s, g)
		var de *DeadlockError
		if !errors.As(err, &de) {
			t.Fatalf("got %v, want a DeadlockError", err)
		}
		for _, want := range []string{
			"rank 0 step 0 0RECV_B0 waits for rank 1 to post 1SEND_B0 (it is blocked at step 1 in 1F0)",
			"rank 1 step 0 1RECV_F0 waits for rank 0 to post 0SEND_F0 (it is blocked at step 2 in 0B0)",
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q:\n%v", want, err)
			}
		}
	}
}
