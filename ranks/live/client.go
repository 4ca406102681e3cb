package live

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"time"
)

// The client side of /api/state, as pplaunch top reads it.

// StateURL is where the live state of the job serving at addr (train
// --metrics-addr: HOST:PORT, or :PORT for loopback) is read from.
func StateURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("address %q: %v (want HOST:PORT or :PORT, as given to train --metrics-addr)", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/api/state", nil
}

// FetchState reads a job's state from url (StateURL's), within 5 s.
func FetchState(ctx context.Context, url string) (State, error) {
	var st State
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return st, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, fmt.Errorf("no job answers at %s (is train running with --metrics-addr there?): %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("%s: %s (is this pplaunch's --metrics-addr?)", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return st, fmt.Errorf("%s: %w (is this pplaunch's --metrics-addr?)", url, err)
	}
	return st, nil
}
