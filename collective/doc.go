// Package collective gives each rank point-to-point transfers and group
// operations (all-reduce, broadcast, barrier) over a pluggable backend: TCP
// (NewTCP: any machine, multi-node), NCCL (NewNCCL: GPU device memory, the
// libraries loaded at run time through cbits) and in-memory (NewMemoryWorld:
// goroutine ranks, for tests). Every TCP message is framed and checked; NCCL
// carries no header, so CheckShapes compares every transfer's shape over a
// host communicator before payloads move. Every wait has a deadline.
//
// It imports only store (to find its peers) and cbits (NCCL and the
// CUDA stream calls); it must never import
// ranks, models, schedules, launch, bench or cmd/pplaunch: those build on it.
// Its subpackage ncclfake stands in for NCCL in tests (NCCLOptions.API).
//
// # Choosing and joining
//
// ChooseBackend is --backend's decision (tcp, nccl or auto) over the facts
// ProbeBackend gathers at the edge (the GPUs, NCCL's version, the ranks per
// node), pure and table-tested; DescribeNCCL is what `pplaunch devices`
// says of it. JoinTCP and JoinNCCL join a launched job's communicators
// through its store.
//
// # Messages
//
// A message carries a Buffer (float32, float64 or bytes, with a shape) and a
// Tag: kind (activation, gradient, ...), model chunk, step and micro-batch.
// Between two ranks, messages with the same tag arrive in the order they were
// sent; a receive takes the oldest message with its tag. The receiver states
// the dtype and shape it expects; a message that differs fails the receive
// with an error naming both ranks and both shapes.
//
// Receives write into the caller's buffer. One posted (Irecv) before its
// message arrives is filled straight from the socket (only the first few KiB
// pass through the link's frame buffer); a message that arrives first is
// staged (in reused buffers, at most TCPOptions.StageLimit bytes in all; past
// it the link is not read, so TCP holds the sender back) and copied once, and
// if the receive is posted while it is still arriving, only the part already
// staged is copied. A buffer belongs to the communicator until its handle is
// done.
//
// # How a TCP link moves bytes
//
// The TCP files hold the details and the measurements behind them:
// tcplink.go (a link to one peer), tcpsend.go (inline writes, eager copies,
// the writer goroutine), tcprecv.go (the reader goroutine, staging) and
// spinreader.go (polling a socket before parking, while every rank on the
// host has a CPU of its own). Blocking Send and Recv reuse their handle when
// their Wait did not park.
//
// # Portability to backends that pair transfers by order
//
// A backend such as NCCL pairs sends and receives by order per peer, and a
// send and a receive between the same two ranks that must progress together
// (the 1F1B steady state) must be issued in one group. Code that issues its transfers to each
// peer in the same order as that peer issues the matching ones, and uses Batch
// for such pairs, behaves the same on every backend.
//
// # Group operations
//
// AllReduce (sum, avg, max over float32 or float64) sends small buffers to
// every rank in one round and reduces locally; large ones go round a ring
// (reduce-scatter then all-gather), pipelined in segments. Either way each
// element is reduced in one fixed order (see ChunkBounds), so float64 results
// equal that fixed-order sum exactly and every rank holds the same bits.
// Broadcast sends small buffers directly and pipes large ones down a chain;
// Barrier is a dissemination barrier. Group makes sub-communicators (pipeline,
// data-parallel, first/last stage) that share the parent's connections.
//
// # Failures
//
// Every wait honours its context, or the communicator's default timeout
// (Options.Timeout) when the context has none; a timed-out operation is
// withdrawn (or, if half on the wire, its link is broken) before the call
// returns, and the error names the operation, the peer and the time waited:
// "recv activation chunk=0 step=3 mb=2 from rank 1: timeout after 30s".
// Deadlines are measured on the run clock (RunTimeout), which leaves out the
// time the process was stopped: a job suspended with Ctrl-Z for longer than
// its timeout carries on when continued. A
// peer that closes, aborts or dies fails the operations waiting on it at
// once, naming it. Abort fails everything on this rank and drops its links.
// TCP peers prove they hold the job token (HMAC over fresh nonces, the
// store's handshake) before any frame is accepted. A rank's listener accepts
// every connection at once and holds at most store.MaxHello bytes of each that
// has not proved it, each for at most store.HandshakeTimeout, a capped number
// per source address and in all (store.Pending: the oldest goes), logs every
// refusal, and stops waiting on them once every peer is in: a silent or
// hostile connection holds up nothing.
package collective
