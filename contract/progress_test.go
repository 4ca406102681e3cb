package contract

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A progress file written record by record reads back, and a record caught
// mid-write (its two sequence numbers differ) is not taken.
func TestProgressRecords(t *testing.T) {
	mem := make([]byte, ProgressSize)
	f := bytes.NewReader(mem)
	if action, _, _, failed := ReadProgress(f); action != "" || failed {
		t.Errorf("empty file: action %q, failed %v", action, failed)
	}
	at := time.Unix(1764590000, 123456789)
	WriteRecord(mem[:ProgressActionSize], []byte("1764590000123456789 4242 step 3 1RECV_F2"), 1)
	fail, _ := json.Marshal(Failure{Class: FailTimeout, Peer: 1, Text: "recv activation mb=2 from rank 1: timeout after 30s", At: at})
	WriteRecord(mem[ProgressActionSize:], fail, 2)
	action, since, got, failed := ReadProgress(bytes.NewReader(mem))
	if action != "step 3 1RECV_F2" || !since.Equal(at) || !failed || got.Class != FailTimeout || got.Peer != 1 || !got.At.Equal(at) {
		t.Errorf("read %q since %v, %+v failed %v", action, since, got, failed)
	}
	binary.LittleEndian.PutUint32(mem[ProgressActionSize-4:], 7) // the writer is in the middle of the action
	if action, _, _, _ := ReadProgress(bytes.NewReader(mem)); action != "" {
		t.Errorf("a torn record read as %q", action)
	}
}

func TestProgressPath(t *testing.T) {
	if got := ProgressPath("/run/x", 12); got != filepath.Join("/run/x", "rank.12.progress") {
		t.Errorf("ProgressPath = %q", got)
	}
}

func TestSignalName(t *testing.T) {
	for s, want := range map[os.Signal]string{os.Kill: "SIGKILL", os.Interrupt: "SIGINT"} {
		if got := SignalName(s); got != want {
			t.Errorf("SignalName(%v) = %q, want %q", s, got, want)
		}
	}
}
