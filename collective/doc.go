// Package collective gives each rank point-to-point transfers and group
// operations (all-reduce, broadcast, barrier) over a pluggable backend: TCP
// (NewTCP: any machine, multi-node), in-memory (NewMemoryWorld: goroutine ranks,
// for tests) and, later, NCCL (GPU). Every message is framed and checked; every
// wait has a deadline.
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
// Frames to a peer leave in send order through one queue. A send that finds
// the link idle writes its frame itself with one non-blocking writev, from the
// caller's buffer; what the socket does not take goes to the link's writer
// goroutine. A send of up to 64 KiB that finds the link busy is copied and
// complete at once (eager; at most 4 MiB held per peer), and the writer puts
// everything queued on the wire with one writev. Frames over 256 KiB go to the
// writer so that Isend returns at once.
//
// Waking a parked goroutine through the kernel and the scheduler costs
// microseconds a message, so while every rank on the host has a CPU of its
// own (TCPOptions.Poll, and SocketBuffer for the 256 KiB send buffers of
// same-host links chosen then), a link's reader polls its socket for up to
// 250 µs before it parks when the last frame came less than 1 ms ago, and
// through payloads of 1 MiB and more. The Wait of one receive of up to 16 KiB
// meanwhile takes the socket over from the reader between frames and reads
// frames itself, as long as each is whole in the link's buffer and needs no
// waiting (anything else stays with the reader): the waiting goroutine sees
// its message one poll sooner and runs on without goroutine switches. Other
// Waits yield to the readers up to 64 times before they park. The cost is
// bounded: about 250 µs of CPU per message or wait at most, none on an idle
// link. Blocking Send and Recv reuse their handle when their Wait did not
// park, so a round trip of small messages allocates nothing.
//
// # Portability to NCCL
//
// NCCL pairs sends and receives by order per peer, and a send and a receive
// between the same two ranks that must progress together (the 1F1B steady
// state) must be issued in one group. Code that issues its transfers to each
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
// "recv activation chunk=0 step=3 mb=2 from rank 1: timeout after 30s". A
// peer that closes, aborts or dies fails the operations waiting on it at
// once, naming it. Abort fails everything on this rank and drops its links.
// TCP peers prove they hold the job token (HMAC over fresh nonces, the
// store's handshake) before any frame is accepted. A rank's listener holds at
// most store.MaxHello bytes and store.MaxHandshakes connections that have not
// proved it, each for at most store.HandshakeTimeout, and stops waiting on
// them once every peer is in: a silent or hostile connection holds up nothing.
package collective
