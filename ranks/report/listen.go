package report

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
)

// CheckMetricsAddr refuses a --metrics-addr that cannot be listened on as
// given.
func CheckMetricsAddr(addr string) error {
	if addr == "" {
		return nil
	}
	if _, port, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("--metrics-addr %q: %v (want HOST:PORT or :PORT, e.g. :9400)", addr, err)
	} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("--metrics-addr %q: port %q is not a number from 0 to 65535", addr, port)
	}
	return nil
}

// listenAddr is where --metrics-addr listens: a port alone means loopback,
// so the view is not on every interface unless asked for.
func listenAddr(addr string) string {
	if host, port, err := net.SplitHostPort(addr); err == nil && host == "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// listenKept listens on addr. Under the agent (progress names the rank's
// progress file in the agent's run directory) a free port (port 0) is kept
// for the run: a restarted group's rank 0 listens where the first one did, so
// an open page or pplaunch top finds the job again.
func listenKept(addr, progress string) (net.Listener, error) {
	_, port, _ := net.SplitHostPort(addr)
	if progress == "" || port != "0" {
		return net.Listen("tcp", addr)
	}
	kept := filepath.Join(filepath.Dir(progress), "metrics-addr")
	if b, err := os.ReadFile(kept); err == nil {
		if ln, err := net.Listen("tcp", string(b)); err == nil {
			return ln, nil
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		os.WriteFile(kept, []byte(ln.Addr().String()), 0o600) // at worst, a restart gets another port
	}
	return ln, err
}
