package collective_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/pplaunch/pplaunch/collective"
)

// Two pipeline stages in a 1F1B steady state: stage 0 sends micro-batch m's
// activation while receiving micro-batch m-1's gradient, in one Batch, into
// buffers it owns (posted before the data arrives, so nothing is copied).
func Example() {
	comms, _ := collective.NewMemoryWorld(2, collective.Options{})
	ctx := context.Background()
	var wg sync.WaitGroup
	out := make([]string, 2)
	for _, c := range comms {
		wg.Go(func() {
			defer c.Close()
			act, grad := make([]float32, 4), make([]float32, 4)
			for mb := uint32(1); mb <= 2; mb++ {
				fwd := collective.Tag{Kind: collective.Activation, Step: 7, MicroBatch: mb}
				bwd := collective.Tag{Kind: collective.Gradient, Step: 7, MicroBatch: mb - 1}
				if c.Rank() == 0 {
					for i := range act {
						act[i] = float32(mb)
					}
					h := c.Batch(collective.SendOp(1, fwd, collective.F32(act, 2, 2)),
						collective.RecvOp(1, bwd, collective.F32(grad, 2, 2)))
					if err := h.Wait(ctx); err != nil {
						out[0] = err.Error()
						return
					}
					out[0] += fmt.Sprintf("mb %d: gradient %v\n", mb-1, grad)
					continue
				}
				for i := range grad {
					grad[i] = -act[i]
				}
				h := c.Batch(collective.RecvOp(0, fwd, collective.F32(act, 2, 2)),
					collective.SendOp(0, bwd, collective.F32(grad, 2, 2)))
				if err := h.Wait(ctx); err != nil {
					out[1] = err.Error()
					return
				}
			}
		})
	}
	wg.Wait()
	fmt.Print(out[0], out[1])
	// Output:
	// mb 0: gradient [-0 -0 -0 -0]
	// mb 1: gradient [-1 -1 -1 -1]
}
