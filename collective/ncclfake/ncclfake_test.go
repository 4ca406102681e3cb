package ncclfake

import (
	"errors"
	"testing"

	"github.com/pplaunch/pplaunch/cbits"
)

func code(err error) int {
	var e *cbits.CUDAError
	if errors.As(err, &e) {
		return e.Code
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestFirstUseInProgress: as real NCCL does, the first send on a connection
// returns ncclInProgress and the communicator stays in progress until the
// peer has used the connection too; a call on it meanwhile is
// ncclInvalidUsage; once both sides are up, the data has moved and the next
// use is not in progress.
func TestFirstUseInProgress(t *testing.T) {
	f := New(nil)
	r0, r1 := f.Rank(), f.Rank()
	id, _ := r0.UniqueID()
	c0, err0 := r0.CommInitRank(2, id, 0, false)
	c1, err1 := r1.CommInitRank(2, id, 1, false)
	if code(err0) != cbits.NCCLInProgress || code(err1) != cbits.NCCLInProgress || r0.CommGetAsyncError(c0) != nil {
		t.Fatalf("init: %v, %v, then %v", err0, err1, r0.CommGetAsyncError(c0))
	}
	s0, _ := r0.StreamCreate()
	s1, _ := r1.StreamCreate()
	src, dst := f.Upload([]float32{1, 2}), f.Upload([]float32{0, 0})

	must := func(want int, err error, what string) {
		t.Helper()
		if code(err) != want {
			t.Fatalf("%s: %v, want code %d", what, err, want)
		}
	}
	must(0, r0.GroupStart(), "group start")
	must(0, r0.Send(src, 2, cbits.NCCLFloat32, 1, c0, s0), "send")
	must(cbits.NCCLInProgress, r0.GroupEnd(), "first send's group end")
	must(cbits.NCCLInProgress, r0.CommGetAsyncError(c0), "rank 0 before its peer posted")
	must(cbits.NCCLInvalidUsage, r0.Send(src, 2, cbits.NCCLFloat32, 1, c0, s0), "a send while in progress")
	must(cbits.NCCLInProgress, r1.Recv(dst, 2, cbits.NCCLFloat32, 0, c1, s1), "the peer's first receive")
	must(0, r0.CommGetAsyncError(c0), "rank 0 once the peer posted")
	must(0, r1.CommGetAsyncError(c1), "rank 1 once both posted")
	if got := f.Download(dst, 2); got[0] != 1 || got[1] != 2 {
		t.Fatalf("received %v", got)
	}
	must(0, r0.Send(src, 2, cbits.NCCLFloat32, 1, c0, s0), "second send")
	must(0, r1.Recv(dst, 2, cbits.NCCLFloat32, 0, c1, s1), "second receive")
	// The other direction is a connection of its own, and so are collectives.
	must(cbits.NCCLInProgress, r1.Send(src, 2, cbits.NCCLFloat32, 0, c1, s1), "first send 1 -> 0")
	must(cbits.NCCLInProgress, r0.Recv(dst, 2, cbits.NCCLFloat32, 1, c0, s0), "first receive 1 -> 0")
	must(cbits.NCCLInProgress, r0.AllReduce(src, src, 2, cbits.NCCLFloat32, cbits.NCCLSum, c0, s0), "first all-reduce, rank 0")
	must(cbits.NCCLInProgress, r0.CommGetAsyncError(c0), "rank 0 waiting for rank 1's all-reduce")
	must(cbits.NCCLInProgress, r1.AllReduce(dst, dst, 2, cbits.NCCLFloat32, cbits.NCCLSum, c1, s1), "first all-reduce, rank 1")
	must(0, r0.CommGetAsyncError(c0), "after both all-reduces")
	if f.InProgress() != 6 {
		t.Errorf("%d calls answered in progress, want 6", f.InProgress())
	}
}
