package collective

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/pplaunch/pplaunch/store"
)

// JoinTCP joins the TCP communicator of a launched job as rank of size,
// proving token (the job's) to its peers. The rank listens on the address
// it reaches the job's store (at storeAddr) from, which is one its peers
// can reach too: loopback on one node, the node's interface across nodes.
// opts.Timeout bounds the joining, in run time (time stopped does not
// count), as well as every later wait.
func JoinTCP(ctx context.Context, st store.Store, storeAddr, token string, rank, size int, opts TCPOptions) (Comm, error) {
	host := "127.0.0.1"
	if c, err := net.Dial("udp", storeAddr); err == nil {
		host = c.LocalAddr().(*net.UDPAddr).IP.String()
		c.Close()
	}
	dctx, cancel := RunTimeout(ctx, opts.Timeout)
	defer cancel()
	opts.Token, opts.Addr = token, net.JoinHostPort(host, "0")
	comm, err := NewTCP(dctx, st, rank, size, opts)
	if err != nil {
		return nil, fmt.Errorf("rank %d: communicator: %w", rank, err)
	}
	return comm, nil
}

// JoinNCCL joins the NCCL communicator of a launched job as rank of size,
// on the GPU whose device thread dev makes every NCCL call (a CUDA
// backend's; nil where tensors live in host memory). The unique id travels
// through the job's store st, under a key of the job's restart. timeout
// bounds the joining as well as every later wait.
func JoinNCCL(ctx context.Context, st store.Store, rank, size, restart int, dev DeviceThread, timeout time.Duration) (Comm, error) {
	if dev == nil {
		return nil, errors.New("--backend nccl moves GPU tensors: use --device cuda")
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return NewNCCL(dctx, st, rank, size, NCCLOptions{
		Options: Options{Timeout: timeout}, Device: dev, StorePrefix: fmt.Sprintf("nccl/restart%d", restart),
	})
}
