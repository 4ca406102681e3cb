package store

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// The handshake every pplaunch listener (the store, a rank's link listener)
// runs on a new connection before it reads anything else from it. Both ends
// prove they hold the job's token with HMAC-SHA256 over a nonce of each side,
// so the token never crosses the wire and a recorded exchange cannot be
// replayed:
//
//	acceptor → dialer    magic (4) | nonce A (16)
//	dialer   → acceptor  magic (4) | nonce D (16) | u8 n | about (n) | HMAC(token, magic "dial" A D about)
//	acceptor → dialer    0 | HMAC(token, magic "accept" D A about)       admitted
//	                or   1 | u16 n | reason (n)                          refused
//
// about is what the dialer asks for (the store: its key namespace; a rank:
// its rank, the rank it dials and the world size); it is covered by both
// proofs. The acceptor reads at most MaxHello bytes before the dialer has
// proved the token, so an unauthenticated peer can make it hold no more.
const (
	// NonceLen is the length of each side's nonce.
	NonceLen = 16
	// MaxAbout bounds the about field of a hello.
	MaxAbout = 255
	// MaxHello bounds the bytes an acceptor reads from a connection before it
	// knows the peer holds the token.
	MaxHello = 4 + NonceLen + 1 + MaxAbout + sha256.Size
	// HandshakeTimeout is how long a listener gives a new connection to
	// complete the handshake, on its own clock: a peer that connects and
	// stays silent is dropped after it, while other peers are admitted.
	HandshakeTimeout = 10 * time.Second
	// WrongToken is the reason a listener gives a dialer whose proof does
	// not match its token.
	WrongToken = "wrong job token"
)

// RefusedError is a listener's refusal of the handshake, with its reason.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return "refused the connection: " + e.Reason }

func prove(token, magic, label string, first, second, about []byte) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(magic))
	m.Write([]byte(label))
	m.Write(first)
	m.Write(second)
	m.Write(about)
	return m.Sum(nil)
}

// AcceptHandshake runs the acceptor's side on c and returns the dialer's
// about. check, when not nil, vets about once the dialer has proved the
// token; its error refuses the connection with that reason. The caller sets
// c's deadline. On error the dialer has been told why (best effort) and c
// must be closed.
func AcceptHandshake(c net.Conn, magic, token string, check func(about []byte) error) ([]byte, error) {
	if len(magic) != 4 {
		panic("store: handshake magic must be 4 bytes")
	}
	var nonce [NonceLen]byte
	rand.Read(nonce[:]) // never fails (crypto/rand)
	if _, err := c.Write(append([]byte(magic), nonce[:]...)); err != nil {
		return nil, fmt.Errorf("send greeting: %w", err)
	}
	var hello [MaxHello]byte
	if _, err := io.ReadFull(c, hello[:4]); err != nil {
		return nil, fmt.Errorf("no hello: %w", err)
	}
	if string(hello[:4]) != magic {
		return nil, refuse(c, fmt.Sprintf("not a pplaunch %s hello (it starts %q)", magic, hello[:4]))
	}
	head := hello[:4+NonceLen+1]
	if _, err := io.ReadFull(c, head[4:]); err != nil {
		return nil, fmt.Errorf("hello cut short: %w", err)
	}
	n := int(head[len(head)-1])
	rest := hello[len(head) : len(head)+n+sha256.Size]
	if _, err := io.ReadFull(c, rest); err != nil {
		return nil, fmt.Errorf("hello cut short: %w", err)
	}
	theirs, about, proof := head[4:4+NonceLen], rest[:n], rest[n:]
	if !hmac.Equal(proof, prove(token, magic, "dial", nonce[:], theirs, about)) {
		return nil, refuse(c, WrongToken)
	}
	if check != nil {
		if err := check(about); err != nil {
			return nil, refuse(c, err.Error())
		}
	}
	reply := append([]byte{0}, prove(token, magic, "accept", theirs, nonce[:], about)...)
	if _, err := c.Write(reply); err != nil {
		return nil, fmt.Errorf("send answer: %w", err)
	}
	return append([]byte(nil), about...), nil
}

// refuse tells the dialer why (best effort) and returns the reason.
func refuse(c net.Conn, why string) error {
	msg := []byte(why)[:min(len(why), 1<<16-1)]
	c.Write(append([]byte{1, byte(len(msg) >> 8), byte(len(msg))}, msg...))
	return errors.New(why)
}

// DialHandshake runs the dialer's side on c, asking for about. A refusal is a
// *RefusedError; an acceptor that cannot prove the token is an error too. The
// caller sets c's deadline.
func DialHandshake(c net.Conn, magic, token string, about []byte) error {
	if len(about) > MaxAbout {
		return fmt.Errorf("handshake: %d bytes to ask for exceed the limit of %d", len(about), MaxAbout)
	}
	var greet [4 + NonceLen]byte
	if _, err := io.ReadFull(c, greet[:]); err != nil {
		return fmt.Errorf("read greeting: %w", err)
	}
	if string(greet[:4]) != magic {
		return fmt.Errorf("not a pplaunch %s listener (it greets with %q)", magic, greet[:4])
	}
	var mine [NonceLen]byte
	rand.Read(mine[:])
	hello := make([]byte, 0, MaxHello)
	hello = append(hello, magic...)
	hello = append(hello, mine[:]...)
	hello = append(hello, byte(len(about)))
	hello = append(hello, about...)
	hello = append(hello, prove(token, magic, "dial", greet[4:], mine[:], about)...)
	if _, err := c.Write(hello); err != nil {
		return fmt.Errorf("send hello: %w", err)
	}
	var status [1]byte
	if _, err := io.ReadFull(c, status[:]); err != nil {
		return fmt.Errorf("read answer to the hello: %w", err)
	}
	if status[0] != 0 {
		var l [2]byte
		io.ReadFull(c, l[:])
		why := make([]byte, int(l[0])<<8|int(l[1]))
		n, _ := io.ReadFull(c, why)
		return &RefusedError{Reason: string(why[:n])}
	}
	proof := make([]byte, sha256.Size)
	if _, err := io.ReadFull(c, proof); err != nil {
		return fmt.Errorf("read answer to the hello: %w", err)
	}
	if !hmac.Equal(proof, prove(token, magic, "accept", mine[:], greet[4:], about)) {
		return errors.New("the listener does not hold the job token")
	}
	return nil
}
