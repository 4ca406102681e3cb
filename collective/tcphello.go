package collective

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/pplaunch/pplaunch/store"
)

// The rank links' handshake is the store's (store.AcceptHandshake): both ends
// prove the job token with HMAC-SHA256 over a nonce of each, so it never
// crosses the wire. What the dialer asks for is its rank, the rank it dials
// and the world size, each a little-endian u32.
const (
	handshakeMagic = "PPH2"
	nonceLen       = store.NonceLen
)

func rankAbout(from, to, size int) []byte {
	var b [12]byte
	binary.LittleEndian.PutUint32(b[0:], uint32(from))
	binary.LittleEndian.PutUint32(b[4:], uint32(to))
	binary.LittleEndian.PutUint32(b[8:], uint32(size))
	return b[:]
}

// handshakeLimit is how long a connection to this rank's listener has to
// prove the token: store.HandshakeTimeout unless a test shortens it.
func (t *tcpTransport) handshakeLimit() time.Duration {
	if t.opts.handshakeTimeout > 0 {
		return t.opts.handshakeTimeout
	}
	return store.HandshakeTimeout
}

// handshakeAccept runs the acceptor's side within its own deadline (the
// handshake limit, or ctx's deadline if sooner) and returns the dialer's
// rank. Closing c (once the world is complete) cuts it short.
func (t *tcpTransport) handshakeAccept(ctx context.Context, c *net.TCPConn) (int, error) {
	dl := time.Now().Add(t.handshakeLimit())
	if cd, ok := ctx.Deadline(); ok && cd.Before(dl) {
		dl = cd
	}
	c.SetDeadline(dl)
	from := -1
	_, err := store.AcceptHandshake(c, handshakeMagic, t.opts.Token, func(about []byte) error {
		if len(about) != 12 {
			return fmt.Errorf("a hello of %d bytes, not a rank's 12", len(about))
		}
		f := int(binary.LittleEndian.Uint32(about[0:]))
		to := int(binary.LittleEndian.Uint32(about[4:]))
		size := int(binary.LittleEndian.Uint32(about[8:]))
		if to != t.rank || size != t.size || f <= t.rank || f >= t.size {
			return fmt.Errorf("rank %d of world %d dialed rank %d, but this is rank %d of world %d", f, size, to, t.rank, t.size)
		}
		from = f
		return nil
	})
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return -1, fmt.Errorf("no complete hello within %v", t.handshakeLimit())
	}
	if err != nil {
		return -1, err
	}
	return from, c.SetDeadline(time.Time{})
}

// handshakeDial runs the dialer's side; ctx bounds it.
func (t *tcpTransport) handshakeDial(ctx context.Context, c *net.TCPConn, peer int) error {
	defer context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })()
	err := store.DialHandshake(c, handshakeMagic, t.opts.Token, rankAbout(t.rank, peer, t.size))
	var ref *store.RefusedError
	if errors.As(err, &ref) {
		return fmt.Errorf("rank %d refused the connection: %s", peer, ref.Reason)
	}
	if err != nil {
		return err
	}
	return c.SetDeadline(time.Time{})
}
