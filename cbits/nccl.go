//go:build cgo

package cbits

/*
#include <limits.h>
#include <stddef.h>
#include <string.h>

typedef struct { char internal[128]; } pp_nccl_id;

// pp_nccl_config is the prefix of ncclConfig_t that NCCL 2.18 and later
// read: NCCL copies min(size, its own sizeof) bytes and gives every field
// newer than version its default, so the prefix is valid on every release
// since. The values are NCCL_CONFIG_INITIALIZER's (NCCL_CONFIG_UNDEF_INT is
// INT_MIN, NCCL_CONFIG_UNDEF_PTR NULL, NCCL_API_MAGIC 0xcafebeef), with
// blocking set by the caller.
typedef struct {
	size_t size;
	unsigned int magic;
	unsigned int version;
	int blocking;
	int cgaClusterSize;
	int minCTAs;
	int maxCTAs;
	const char *netName;
	int splitShare;
} pp_nccl_config;

static void pp_nc_config(pp_nccl_config *c, int blocking) {
	c->size = sizeof(pp_nccl_config);
	c->magic = 0xcafebeef;
	c->version = 21800; // NCCL_VERSION(2,18,0): the fields above
	c->blocking = blocking;
	c->cgaClusterSize = INT_MIN;
	c->minCTAs = INT_MIN;
	c->maxCTAs = INT_MIN;
	c->netName = NULL;
	c->splitShare = INT_MIN;
}

static int pp_nc_uid(void *f, void *out) {
	pp_nccl_id id;
	int r = ((int (*)(pp_nccl_id *))f)(&id);
	memcpy(out, &id, sizeof id);
	return r;
}

// The id goes by value, as ncclCommInitRankConfig takes it.
static int pp_nc_init(void *f, size_t *comm, int nranks, const void *id, int rank, int blocking) {
	pp_nccl_id v;
	pp_nccl_config c;
	memcpy(&v, id, sizeof v);
	pp_nc_config(&c, blocking);
	return ((int (*)(void **, int, pp_nccl_id, int, pp_nccl_config *))f)((void **)comm, nranks, v, rank, &c);
}

static int pp_nc_split(void *f, size_t comm, int color, int key, size_t *out, int blocking) {
	pp_nccl_config c;
	pp_nc_config(&c, blocking);
	return ((int (*)(void *, int, int, void **, pp_nccl_config *))f)((void *)comm, color, key, (void **)out, &c);
}

static int pp_nc_p2p(void *f, size_t buf, size_t count, int dtype, int peer, size_t comm, size_t stream) {
	return ((int (*)(void *, size_t, int, int, void *, void *))f)((void *)buf, count, dtype, peer, (void *)comm, (void *)stream);
}

static int pp_nc_allreduce(void *f, size_t send, size_t recv, size_t count, int dtype, int op, size_t comm, size_t stream) {
	return ((int (*)(void *, void *, size_t, int, int, void *, void *))f)((void *)send, (void *)recv, count, dtype, op, (void *)comm, (void *)stream);
}

static int pp_nc_bcast(void *f, size_t send, size_t recv, size_t count, int dtype, int root, size_t comm, size_t stream) {
	return ((int (*)(void *, void *, size_t, int, int, void *, void *))f)((void *)send, (void *)recv, count, dtype, root, (void *)comm, (void *)stream);
}

static const char *pp_nc_str(void *f, int r) { return ((const char *(*)(int))f)(r); }
static int pp_nc_v(void *f) { return ((int (*)(void))f)(); }
static int pp_nc_c(void *f, size_t comm) { return ((int (*)(void *))f)((void *)comm); }
static int pp_nc_async(void *f, size_t comm, int *state) { return ((int (*)(void *, int *))f)((void *)comm, state); }
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// UniqueID copies ncclGetUniqueId's 128-byte id (the bootstrap address of
// the communicator's root).
func (n *NCCLLib) UniqueID() (NCCLUniqueID, error) {
	var id NCCLUniqueID
	r := C.pp_nc_uid(n.sym[ncGetUniqueID], unsafe.Pointer(&id[0]))
	return id, n.err(r, "ncclGetUniqueId")
}

// CommInitRank calls ncclCommInitRankConfig for rank of nranks with id
// (passed by value). Non-blocking (blocking=false), it may return
// ErrNCCLInProgress with the communicator set: poll CommGetAsyncError until
// it is done before using it. The device must be set on this thread first.
func (n *NCCLLib) CommInitRank(nranks int, id NCCLUniqueID, rank int, blocking bool) (NCCLComm, error) {
	var c C.size_t
	r := C.pp_nc_init(n.sym[ncCommInitRankConfig], &c, C.int(nranks), unsafe.Pointer(&id[0]), C.int(rank), cBool(blocking))
	return NCCLComm(c), n.err(r, fmt.Sprintf("ncclCommInitRankConfig(nranks %d, rank %d, blocking %v)", nranks, rank, blocking))
}

// CommSplit calls ncclCommSplit(comm, color, key) with the same kind of
// config as CommInitRank; color NCCLSplitNoColor gives no communicator (0).
func (n *NCCLLib) CommSplit(comm NCCLComm, color, key int, blocking bool) (NCCLComm, error) {
	var c C.size_t
	r := C.pp_nc_split(n.sym[ncCommSplit], C.size_t(comm), C.int(color), C.int(key), &c, cBool(blocking))
	return NCCLComm(c), n.err(r, fmt.Sprintf("ncclCommSplit(color %d, key %d)", color, key))
}

// Send calls ncclSend of count elements of dtype at buf to peer on stream.
func (n *NCCLLib) Send(buf DevPtr, count int, dtype NCCLDataType, peer int, comm NCCLComm, s Stream) error {
	r := C.pp_nc_p2p(n.sym[ncSend], C.size_t(buf), C.size_t(count), C.int(dtype), C.int(peer), C.size_t(comm), C.size_t(s))
	return n.err(r, fmt.Sprintf("ncclSend(%d x %v to rank %d)", count, dtype, peer))
}

// Recv calls ncclRecv of count elements of dtype into buf from peer on stream.
func (n *NCCLLib) Recv(buf DevPtr, count int, dtype NCCLDataType, peer int, comm NCCLComm, s Stream) error {
	r := C.pp_nc_p2p(n.sym[ncRecv], C.size_t(buf), C.size_t(count), C.int(dtype), C.int(peer), C.size_t(comm), C.size_t(s))
	return n.err(r, fmt.Sprintf("ncclRecv(%d x %v from rank %d)", count, dtype, peer))
}

// AllReduce calls ncclAllReduce (in place when send == recv).
func (n *NCCLLib) AllReduce(send, recv DevPtr, count int, dtype NCCLDataType, op NCCLRedOp, comm NCCLComm, s Stream) error {
	r := C.pp_nc_allreduce(n.sym[ncAllReduce], C.size_t(send), C.size_t(recv), C.size_t(count), C.int(dtype), C.int(op), C.size_t(comm), C.size_t(s))
	return n.err(r, fmt.Sprintf("ncclAllReduce(%d x %v, %v)", count, dtype, op))
}

// Broadcast calls ncclBroadcast from root (in place when send == recv).
func (n *NCCLLib) Broadcast(send, recv DevPtr, count int, dtype NCCLDataType, root int, comm NCCLComm, s Stream) error {
	r := C.pp_nc_bcast(n.sym[ncBroadcast], C.size_t(send), C.size_t(recv), C.size_t(count), C.int(dtype), C.int(root), C.size_t(comm), C.size_t(s))
	return n.err(r, fmt.Sprintf("ncclBroadcast(%d x %v, root %d)", count, dtype, root))
}

// GroupStart calls ncclGroupStart.
func (n *NCCLLib) GroupStart() error { return n.err(C.pp_nc_v(n.sym[ncGroupStart]), "ncclGroupStart") }

// GroupEnd calls ncclGroupEnd; on a non-blocking communicator it may return
// ErrNCCLInProgress.
func (n *NCCLLib) GroupEnd() error { return n.err(C.pp_nc_v(n.sym[ncGroupEnd]), "ncclGroupEnd") }

// CommGetAsyncError returns the communicator's state: nil when idle and
// well, an error with code NCCLInProgress while an operation is still being
// set up, or the asynchronous failure.
func (n *NCCLLib) CommGetAsyncError(comm NCCLComm) error {
	var st C.int
	if r := C.pp_nc_async(n.sym[ncCommGetAsyncError], C.size_t(comm), &st); r != 0 {
		return n.err(r, "ncclCommGetAsyncError")
	}
	return n.err(st, "communicator state")
}

// CommAbort calls ncclCommAbort: pending operations stop, resources are
// freed. No other thread may call NCCL on comm meanwhile.
func (n *NCCLLib) CommAbort(comm NCCLComm) error {
	return n.err(C.pp_nc_c(n.sym[ncCommAbort], C.size_t(comm)), "ncclCommAbort")
}

// CommDestroy calls ncclCommDestroy.
func (n *NCCLLib) CommDestroy(comm NCCLComm) error {
	return n.err(C.pp_nc_c(n.sym[ncCommDestroy], C.size_t(comm)), "ncclCommDestroy")
}

// ErrorString is ncclGetErrorString(code).
func (n *NCCLLib) ErrorString(code int) string {
	return C.GoString(C.pp_nc_str(n.sym[ncGetErrorString], C.int(code)))
}

// codeErr is err for a result code held as an int.
func (n *NCCLLib) codeErr(code int, call string) error { return n.err(C.int(code), call) }

func cBool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
