package contract

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// SignalName names a signal as every message of pplaunch does: "SIGKILL"
// for 9, "signal N" for a number with no name.
func SignalName(s os.Signal) string {
	sig, ok := s.(syscall.Signal)
	if !ok {
		return s.String()
	}
	if name := unix.SignalName(sig); name != "" {
		return name
	}
	return fmt.Sprintf("signal %d", int(sig))
}
