package ranks

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/pplaunch/pplaunch/ranks/stageloop"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/tensor"
)

// countingComm counts the elements of the receive buffers a rank posts in
// batches, split into those inside grad (received in place) and the rest
// (buffers allocated to receive into).
type countingComm struct {
	collective.Comm
	grad              []float32
	inPlace, separate int
}

func (c *countingComm) Batch(ops ...collective.Op) *collective.Handle {
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(c.grad)))
	hi := lo + uintptr(len(c.grad))*4
	for _, o := range ops {
		if !o.Recv || len(o.Buf.F32) == 0 {
			continue
		}
		p := uintptr(unsafe.Pointer(&o.Buf.F32[0]))
		if p >= lo && p < hi {
			c.inPlace += len(o.Buf.F32)
		} else {
			c.separate += len(o.Buf.F32)
		}
	}
	return c.Comm.Batch(ops...)
}

// TestDPExchangeBitsAndMemory: dp replicas' exchange leaves every replica
// with the bits of models.TreeSum over the whole gradients in replica order
// (what the exchange of whole copies computed), for sizes that dp divides
// and ones it does not (also smaller than dp), over two steps; and a rank
// receives at most ceil(n/dp)·(dp-1) elements into buffers of its own, the
// rest (the gathered parts) in place into its gradient.
func TestDPExchangeBitsAndMemory(t *testing.T) {
	be, err := tensor.NewCPU("")
	if err != nil {
		t.Fatal(err)
	}
	for _, dp := range []int{2, 3, 4} {
		for _, n := range []int{1, 2, 10, 1001} {
			t.Run(fmt.Sprintf("dp%d/n%d", dp, n), func(t *testing.T) {
				comms, err := collective.NewMemoryWorld(dp, collective.Options{Timeout: 20 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				defer func() {
					for _, c := range comms {
						c.Close()
					}
				}()
				rng := rand.New(rand.NewPCG(uint64(dp), uint64(n)))
				peers := make([]int, dp)
				for d := range peers {
					peers[d] = d
				}
				grads := make([][]float32, dp)
				exs := make([]*dpExchange, dp)
				counts := make([]*countingComm, dp)
				for d := range dp {
					grads[d] = make([]float32, n)
					counts[d] = &countingComm{Comm: comms[d], grad: grads[d]}
					g, _ := tensor.From(grads[d], n)
					exs[d] = newDPExchange(stageloop.NewMover(counts[d], nil, be), be, peers, d, g)
				}
				for step := range 2 {
					want := make([][]float32, dp)
					for d := range dp {
						for i := range grads[d] {
							grads[d][i] = float32(rng.NormFloat64()) * float32(1+rng.IntN(1000))
						}
						want[d] = slices.Clone(grads[d])
					}
					sum, err := models.TreeSum(be, want)
					if err != nil {
						t.Fatal(err)
					}
					var wg sync.WaitGroup
					errs := make([]error, dp)
					for d := range dp {
						wg.Add(1)
						go func() {
							defer wg.Done()
							exs[d].start(context.Background(), collective.Tag{Kind: collective.Data, Chunk: 1, Step: uint32(step)})
							errs[d] = exs[d].finish(context.Background(), 0)
						}()
					}
					wg.Wait()
					for d := range dp {
						if errs[d] != nil {
							t.Fatalf("replica %d: %v", d, errs[d])
						}
						for i := range n {
							if grads[d][i] != sum[i] {
								t.Fatalf("step %d replica %d element %d: %v, want the tree sum %v", step, d, i, grads[d][i], sum[i])
							}
						}
					}
				}
				own := (n + dp - 1) / dp
				for d, c := range counts {
					if c.separate > 2*own*(dp-1) { // two steps
						t.Errorf("replica %d received %d elements into its own buffers in 2 steps, want at most 2·%d·%d", d, c.separate, own, dp-1)
					}
					lo, hi := collective.ChunkBounds(n, dp, d)
					if c.inPlace != 2*(n-(hi-lo)) {
						t.Errorf("replica %d gathered %d elements in place in 2 steps, want 2·%d", d, c.inPlace, n-(hi-lo))
					}
					if exs[d].recv.Len() > own*(dp-1) {
						t.Errorf("replica %d holds %d receive elements, want at most %d", d, exs[d].recv.Len(), own*(dp-1))
					}
				}
			})
		}
	}
}
