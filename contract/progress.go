package contract

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"
)

// The progress file of a rank (EnvProgress): ProgressSize bytes, the action
// record at 0 (ProgressActionSize bytes), the failure record after it. A
// record is: sequence number (uint32, little endian), payload length
// (uint32), payload, and at the record's last 4 bytes the sequence number
// again; the writer bumps the first before and the last after the payload,
// so a reader that sees them differ read a record being written and reads
// again. The action payload is "UNIXNANO PID TEXT"; the failure payload is
// a Failure as JSON. The rank writes (ranks.Progress), the agent reads
// (ReadProgress).
const (
	ProgressSize       = 4096
	ProgressActionSize = 256
)

// Failure classes of the failure record: is the rank's failure its own, or a
// consequence of another's? The agent names a rank with its own failure as
// the root cause before one that only saw it.
const (
	FailError    = "error"     // its own failure
	FailTimeout  = "timeout"   // it waited for a peer until the deadline
	FailPeerGone = "peer-gone" // a peer closed or aborted the link
	FailRelayed  = "relayed"   // it saw another rank's reported failure
	FailStopped  = "stopped"   // a signal stopped it
)

// Failure is a rank's account of its failure, the failure record's payload.
type Failure struct {
	Class string    `json:"class"` // one of the Fail classes
	Peer  int       `json:"peer"`  // the rank it was dealing with, -1 for none
	Text  string    `json:"text"`
	At    time.Time `json:"at"`
}

// ProgressPath is the progress file of global rank rank in the agent's run
// directory dir.
func ProgressPath(dir string, rank int) string {
	return filepath.Join(dir, "rank."+strconv.Itoa(rank)+".progress")
}

// WriteRecord stores payload as the record rec (a slice of the mapped file:
// the action record or the failure record) under sequence number seq, which
// the writer increases at every write.
func WriteRecord(rec, payload []byte, seq uint32) {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&rec[0])), seq)
	binary.LittleEndian.PutUint32(rec[4:], uint32(len(payload)))
	copy(rec[8:len(rec)-4], payload)
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&rec[len(rec)-4])), seq)
}

// ReadRecord reads the record of size bytes at off, retrying while the
// writer is in the middle of it. ok is false for an empty or unreadable
// record.
func ReadRecord(f io.ReaderAt, off, size int64) ([]byte, bool) {
	buf := make([]byte, size)
	for range 100 {
		if n, err := f.ReadAt(buf, off); n != len(buf) && err != nil {
			return nil, false
		}
		begin := binary.LittleEndian.Uint32(buf)
		end := binary.LittleEndian.Uint32(buf[size-4:])
		n := binary.LittleEndian.Uint32(buf[4:])
		if begin == 0 {
			return nil, false
		}
		if begin == end && int64(n) <= size-12 {
			return bytes.Clone(buf[8 : 8+n]), true
		}
	}
	return nil, false
}

// ReadProgress reads a progress file: the rank's last action ("step 1
// 1F2") and when it began, and its failure record, if it wrote them.
func ReadProgress(f io.ReaderAt) (action string, since time.Time, fail Failure, failed bool) {
	if b, ok := ReadRecord(f, 0, ProgressActionSize); ok {
		fields := strings.SplitN(string(b), " ", 3)
		if len(fields) == 3 {
			if ns, err := strconv.ParseInt(fields[0], 10, 64); err == nil {
				since, action = time.Unix(0, ns), fields[2]
			}
		}
	}
	if b, ok := ReadRecord(f, ProgressActionSize, ProgressSize-ProgressActionSize); ok {
		fail.Peer = -1
		failed = json.Unmarshal(b, &fail) == nil && fail.Class != ""
	}
	return
}
