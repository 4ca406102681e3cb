package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The wire protocol. Every message, both ways, is one frame:
//
//	u32 length | u8 op | u64 id | i64 n | u8 flags | key | val | exp | err | u32 nkeys | key...
//
// big-endian, where key, err are strings and val, exp byte strings, each a u32
// length then the bytes. Frames follow the handshake (AcceptHandshake, its
// about the namespace the connection's keys live in); the server answers every
// request with an opReply of the same id, in any order (a blocked get does not
// hold up the requests behind it).
const (
	// MaxKey bounds a key (and an error text).
	MaxKey = 4 << 10
	// MaxNamespace bounds a connection's namespace (sent in the handshake).
	MaxNamespace = MaxAbout
	// MaxValue bounds a value.
	MaxValue = 16 << 20
	// MaxKeys bounds the keys of one Wait.
	MaxKeys = 4096
	// MaxFrame bounds a whole frame; the decoder refuses longer ones before
	// reading them.
	MaxFrame = 2*MaxValue + 2*MaxKey + MaxKeys*(MaxKey/16) + 64
)

type op uint8

const (
	opHello op = iota + 1 // retired: the handshake replaced it; refused as a request
	opSet
	opGet
	opAdd
	opCAS
	opWait
	opDelete
	opCount
	opCancel
	opReply
	opLast = opReply
)

var opNames = [...]string{opHello: "hello", opSet: "set", opGet: "get", opAdd: "add", opCAS: "compare-and-set",
	opWait: "wait", opDelete: "delete", opCount: "count", opCancel: "cancel", opReply: "reply"}

func (o op) String() string {
	if o >= 1 && o <= opLast {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

const (
	flagHasExp  = 1 << iota // CAS: exp is meaningful (else: the key must be absent)
	flagSwapped             // reply to CAS: the swap happened
	flagFound               // reply to delete: the key existed
	flagMask    = flagHasExp | flagSwapped | flagFound
)

// msg is one frame, request or reply.
type msg struct {
	op    op
	id    uint64
	n     int64 // add: delta / new value; count: result; cancel: id to cancel
	flags uint8
	key   string
	val   []byte
	exp   []byte
	err   string // reply: the error, if any
	keys  []string
}

// appendMsg appends m's frame to b.
func appendMsg(b []byte, m *msg) []byte {
	start := len(b)
	b = append(b, 0, 0, 0, 0, byte(m.op))
	b = binary.BigEndian.AppendUint64(b, m.id)
	b = binary.BigEndian.AppendUint64(b, uint64(m.n))
	b = append(b, m.flags)
	b = appendBytes(b, []byte(m.key))
	b = appendBytes(b, m.val)
	b = appendBytes(b, m.exp)
	b = appendBytes(b, []byte(m.err))
	b = binary.BigEndian.AppendUint32(b, uint32(len(m.keys)))
	for _, k := range m.keys {
		b = appendBytes(b, []byte(k))
	}
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b
}

func appendBytes(b, s []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// checkMsg reports a message whose fields exceed the limits, before it is sent.
func checkMsg(m *msg) error {
	switch {
	case len(m.key) > MaxKey:
		return fmt.Errorf("key of %d bytes exceeds the limit of %d", len(m.key), MaxKey)
	case len(m.val) > MaxValue || len(m.exp) > MaxValue:
		return fmt.Errorf("value of %d bytes exceeds the limit of %d", max(len(m.val), len(m.exp)), MaxValue)
	case len(m.keys) > MaxKeys:
		return fmt.Errorf("%d keys exceed the limit of %d", len(m.keys), MaxKeys)
	}
	for _, k := range m.keys {
		if len(k) > MaxKey {
			return fmt.Errorf("key of %d bytes exceeds the limit of %d", len(k), MaxKey)
		}
	}
	return nil
}

// errFrame marks a malformed frame: the connection cannot be trusted further.
var errFrame = errors.New("malformed frame")

// readMsg reads one frame from r. buf is reused for the body when big enough.
func readMsg(r io.Reader, buf []byte) (*msg, []byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, buf, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > MaxFrame {
		return nil, buf, fmt.Errorf("%w: length %d exceeds the limit of %d", errFrame, n, MaxFrame)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, buf, err
	}
	m, err := decodeMsg(buf)
	return m, buf, err
}

// decodeMsg parses a frame body. It never reads past body and bounds every
// length, so a hostile peer can make it fail but not allocate or panic.
func decodeMsg(body []byte) (*msg, error) {
	d := decoder{b: body}
	m := &msg{op: op(d.u8())}
	m.id = d.u64()
	m.n = int64(d.u64())
	m.flags = d.u8()
	m.key = string(d.bytes("key", MaxKey))
	m.val = d.bytes("value", MaxValue)
	m.exp = d.bytes("expected value", MaxValue)
	m.err = string(d.bytes("error", MaxKey))
	nkeys := d.u32()
	if d.err == nil && nkeys > MaxKeys {
		d.fail("%d keys exceed the limit of %d", nkeys, MaxKeys)
	}
	if d.err == nil && nkeys > 0 {
		m.keys = make([]string, 0, min(int(nkeys), len(d.b)/4+1))
		for i := uint32(0); i < nkeys && d.err == nil; i++ {
			m.keys = append(m.keys, string(d.bytes("key", MaxKey)))
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d bytes left over after the message", len(d.b))
	}
	if d.err == nil && (m.op < opHello || m.op > opLast) {
		d.fail("unknown op %d", uint8(m.op))
	}
	if d.err == nil && m.flags&^flagMask != 0 {
		d.fail("unknown flags %#x", m.flags)
	}
	if d.err != nil {
		return nil, d.err
	}
	return m, nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errFrame, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) take(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.b) {
		d.fail("%s needs %d bytes, %d left", what, n, len(d.b))
		return nil
	}
	s := d.b[:n]
	d.b = d.b[n:]
	return s
}

func (d *decoder) u8() uint8 {
	if s := d.take(1, "header"); s != nil {
		return s[0]
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if s := d.take(4, "length"); s != nil {
		return binary.BigEndian.Uint32(s)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if s := d.take(8, "header"); s != nil {
		return binary.BigEndian.Uint64(s)
	}
	return 0
}

// bytes reads a length-prefixed field of at most limit bytes; it copies, so
// the frame buffer can be reused.
func (d *decoder) bytes(what string, limit int) []byte {
	n := d.u32()
	if d.err != nil {
		return nil
	}
	if n > uint32(limit) {
		d.fail("%s of %d bytes exceeds the limit of %d", what, n, limit)
		return nil
	}
	s := d.take(int(n), what)
	if s == nil || n == 0 {
		return nil
	}
	return append([]byte(nil), s...)
}
