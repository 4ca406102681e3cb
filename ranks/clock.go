package ranks

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/pplaunch/pplaunch/collective"
)

// alignClocks measures this rank's clock against rank 0's through the store,
// as NTP does: rank r asks, rank 0 answers with its time, and the answer is
// taken to belong to the midpoint of the round trip; the round with the
// shortest trip wins. Timelines of all ranks are then laid on rank 0's clock.
func (rp *reporter) alignClocks(ctx context.Context) error {
	const rounds = 3
	st := rp.job.Store
	wctx, cancel := rp.waitCtx(ctx)
	defer cancel()
	if rp.job.Rank == 0 {
		rp.origin = time.Now()
		if err := st.Set(wctx, "clock/origin", []byte(strconv.FormatInt(rp.origin.UnixNano(), 10))); err != nil {
			return fmt.Errorf("clock alignment: %w", err)
		}
		for r := 1; r < rp.job.Size; r++ {
			for i := range rounds {
				if _, err := st.Get(wctx, fmt.Sprintf("clock/%d/req/%d", r, i)); err != nil {
					return &collective.PeerError{Peer: r, Err: fmt.Errorf("clock alignment with rank %d: %w", r, err)}
				}
				now := strconv.FormatInt(time.Now().UnixNano(), 10)
				if err := st.Set(wctx, fmt.Sprintf("clock/%d/resp/%d", r, i), []byte(now)); err != nil {
					return &collective.PeerError{Peer: r, Err: fmt.Errorf("clock alignment with rank %d: %w", r, err)}
				}
			}
		}
		return nil
	}
	b, err := st.Get(wctx, "clock/origin")
	if err != nil {
		return &collective.PeerError{Peer: 0, Err: fmt.Errorf("clock alignment: origin from rank 0: %w", err)}
	}
	o, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("clock alignment: origin %q: %w", b, err)
	}
	rp.origin = time.Unix(0, o)
	best := time.Duration(-1)
	for i := range rounds {
		t1 := time.Now()
		if err := st.Set(wctx, fmt.Sprintf("clock/%d/req/%d", rp.job.Rank, i), nil); err != nil {
			return fmt.Errorf("clock alignment: %w", err)
		}
		b, err := st.Get(wctx, fmt.Sprintf("clock/%d/resp/%d", rp.job.Rank, i))
		if err != nil {
			return &collective.PeerError{Peer: 0, Err: fmt.Errorf("clock alignment: answer from rank 0: %w", err)}
		}
		t2 := time.Now()
		r0, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			return fmt.Errorf("clock alignment: answer %q: %w", b, err)
		}
		if rtt := t2.Sub(t1); best < 0 || rtt < best {
			best = rtt
			mid := t1.Add(rtt / 2)
			rp.offset = time.Unix(0, r0).Sub(mid.Round(0))
		}
	}
	return nil
}
