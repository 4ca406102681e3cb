package cbits

import (
	"errors"
	"fmt"
)

// NCCLComm is an ncclComm_t; 0 is none.
type NCCLComm uintptr

// NCCLUniqueID is an ncclUniqueId (NCCL_UNIQUE_ID_BYTES): rank 0 makes it,
// every rank passes it to CommInitRank.
type NCCLUniqueID [128]byte

// NCCLDataType is an ncclDataType_t.
type NCCLDataType int

// The ncclDataType_t values the binding passes.
const (
	NCCLUint8   NCCLDataType = 1
	NCCLFloat32 NCCLDataType = 7
	NCCLFloat64 NCCLDataType = 8
	// NCCLBfloat16 is ncclBfloat16 (NCCL 2.10 and later).
	NCCLBfloat16 NCCLDataType = 9
)

func (d NCCLDataType) String() string {
	switch d {
	case NCCLUint8:
		return "ncclUint8"
	case NCCLFloat32:
		return "ncclFloat32"
	case NCCLFloat64:
		return "ncclFloat64"
	case NCCLBfloat16:
		return "ncclBfloat16"
	}
	return fmt.Sprintf("ncclDataType(%d)", int(d))
}

// NCCLRedOp is an ncclRedOp_t.
type NCCLRedOp int

// The ncclRedOp_t values the binding passes.
const (
	NCCLSum NCCLRedOp = 0
	NCCLMax NCCLRedOp = 2
	NCCLAvg NCCLRedOp = 4
)

func (o NCCLRedOp) String() string {
	switch o {
	case NCCLSum:
		return "ncclSum"
	case NCCLMax:
		return "ncclMax"
	case NCCLAvg:
		return "ncclAvg"
	}
	return fmt.Sprintf("ncclRedOp(%d)", int(o))
}

// ncclResult_t codes a caller acts on.
const (
	NCCLInProgress   = 7
	NCCLRemoteError  = 6
	NCCLInvalidUsage = 5
)

// NCCLSplitNoColor is NCCL_SPLIT_NOCOLOR: CommSplit returns no communicator.
const NCCLSplitNoColor = -1

// IsNCCLInProgress reports whether err is NCCL's ncclInProgress: the
// operation of a non-blocking communicator is still being set up.
func IsNCCLInProgress(err error) bool {
	var e *CUDAError
	return errors.As(err, &e) && e.Lib == "NCCL" && e.Code == NCCLInProgress
}
