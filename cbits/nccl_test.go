//go:build cgo

package cbits

import (
	"os"
	"strings"
	"testing"
)

func realNCCL(t *testing.T) *NCCLLib {
	t.Helper()
	n, err := LoadNCCL()
	if err != nil {
		if os.Getenv("PPLAUNCH_REQUIRE_CUDA_WHEELS") == "1" {
			t.Fatalf("NCCL wheel required here: %v", err)
		}
		t.Skipf("NCCL not found (%s): %v", wheelsHint, firstLine(err))
	}
	return n
}

// TestNCCLUniqueIDWithoutGPU: ncclGetUniqueId either works (it needs no
// device: it only opens the bootstrap root) and gives a non-zero id, or
// fails with an error naming the call and NCCL's result. The log says which.
func TestNCCLUniqueIDWithoutGPU(t *testing.T) {
	n := realNCCL(t)
	id, err := n.UniqueID()
	if err != nil {
		if !strings.HasPrefix(err.Error(), "ncclGetUniqueId: nccl") {
			t.Fatalf("error does not name the call and result: %v", err)
		}
		t.Logf("ncclGetUniqueId fails here: %v", err)
		return
	}
	if id == (NCCLUniqueID{}) {
		t.Fatal("ncclGetUniqueId succeeded with an all-zero id")
	}
	t.Logf("ncclGetUniqueId works here (id starts %x)", id[:8])
}

// TestNCCLInitWithoutGPU: with no usable GPU, a one-rank communicator is
// refused with an error naming ncclCommInitRankConfig and NCCL's result, not
// a crash. Skipped where a GPU is visible (bench/gpu/check.sh covers it).
func TestNCCLInitWithoutGPU(t *testing.T) {
	n := realNCCL(t)
	if c, err := LoadCUDA(); err == nil {
		if k, err := c.DeviceCount(); err == nil && k > 0 {
			t.Skipf("%d GPU(s) visible: the no-GPU error cannot be seen here", k)
		}
	}
	id, err := n.UniqueID()
	if err != nil {
		t.Skipf("no unique id without a GPU: %v", err)
	}
	comm, err := n.CommInitRank(1, id, 0, true)
	if err == nil {
		_ = n.CommDestroy(comm)
		t.Fatal("a communicator was made without a GPU")
	}
	if !strings.Contains(err.Error(), "ncclCommInitRankConfig(nranks 1, rank 0, blocking true): nccl") {
		t.Fatalf("error does not name the call and result: %v", err)
	}
	t.Logf("without a GPU: %v", err)
}

// TestNCCLErrorNames: result codes map to NCCL's names with NCCL's text.
func TestNCCLErrorNames(t *testing.T) {
	n := realNCCL(t)
	for code, name := range map[int]string{4: "ncclInvalidArgument", 7: "ncclInProgress", 6: "ncclRemoteError"} {
		err := n.codeErr(code, "call")
		if err == nil || !strings.HasPrefix(err.Error(), "call: "+name+" (") {
			t.Errorf("code %d: %v, want call: %s (...)", code, err, name)
		}
		if code == NCCLInProgress && !IsNCCLInProgress(err) {
			t.Errorf("IsNCCLInProgress(%v) = false", err)
		}
	}
	if s := n.ErrorString(4); s == "" {
		t.Error("ncclGetErrorString(4) is empty")
	}
}
