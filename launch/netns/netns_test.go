package netns

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as the programs run inside the namespaces.
func TestMain(m *testing.M) {
	switch os.Getenv("NETNS_TEST_HELPER") {
	case "serve":
		os.Exit(serve())
	case "dial":
		n := len(os.Args)
		os.Exit(dial(os.Args[n-2], os.Args[n-1]))
	case "sink":
		os.Exit(sink())
	case "source":
		n := len(os.Args)
		os.Exit(source(os.Args[n-2], os.Args[n-1]))
	case "listen":
		os.Exit(listen())
	case "connect":
		n := len(os.Args)
		os.Exit(connect(os.Args[n-2], os.Args[n-1]))
	}
	os.Exit(m.Run())
}

// listenAnnounced listens on every address of its host and prints the port
// for the test that started it (errors go to stderr: ok is false).
func listenAnnounced() (ln net.Listener, ok bool) {
	ln, err := net.Listen("tcp4", ":0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return nil, false
	}
	fmt.Printf("port %d\n", ln.Addr().(*net.TCPAddr).Port)
	return ln, true
}

// acceptOne is listenAnnounced's first connection.
func acceptOne() (net.Conn, bool) {
	ln, ok := listenAnnounced()
	if !ok {
		return nil, false
	}
	c, err := ln.Accept()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return nil, false
	}
	return c, true
}

// serve answers one connection with its host name and the peer's address.
func serve() int {
	c, ok := acceptOne()
	if !ok {
		return 1
	}
	defer c.Close()
	host, _ := os.Hostname()
	peer := c.RemoteAddr().(*net.TCPAddr).IP
	fmt.Fprintf(c, "server=%s peer=%s", host, peer)
	return 0
}

// dial connects to addr within timeout (host:port, host resolved through /etc/hosts) and prints
// what the server said and its own host name.
func dial(timeout, addr string) int {
	d, err := time.ParseDuration(timeout)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	c, err := net.DialTimeout("tcp4", addr, d)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	b, err := io.ReadAll(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	host, _ := os.Hostname()
	fmt.Printf("%s client=%s", b, host)
	return 0
}

func helper(ctx context.Context, h *Host, mode string, args ...string) *exec.Cmd {
	cmd := h.Command(ctx, os.Args[0], append([]string{"-test.run=^$"}, args...)...)
	// A race-enabled binary sleeps a second as it exits, unless told not to.
	cmd.Env = append(os.Environ(), "NETNS_TEST_HELPER="+mode, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	cmd.Stderr = os.Stderr
	return cmd
}

// startServer runs serve on h and returns the port it listens on.
func startServer(t *testing.T, ctx context.Context, h *Host) (*exec.Cmd, string) {
	t.Helper()
	srv := helper(ctx, h, "serve")
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("server on %s: %v", h.Name, err)
	}
	return srv, strings.TrimPrefix(strings.TrimSpace(line), "port ")
}

func TestTwoHosts(t *testing.T) {
	n := New(t, "nstest-a", "nstest-b")
	a, b := n.Hosts[0], n.Hosts[1]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	for _, h := range n.Hosts {
		out, err := h.Command(ctx, "hostname").Output()
		if err != nil || strings.TrimSpace(string(out)) != h.Name {
			t.Errorf("hostname on %s: %q, %v", h.Name, out, err)
		}
		out, err = h.Command(ctx, "ip", "-o", "-4", "addr", "show", "dev", "eth0").Output()
		if err != nil || !strings.Contains(string(out), " "+h.Addr.String()+"/24 ") {
			t.Errorf("eth0 on %s: %q, %v; want %s", h.Name, out, err, h.Addr)
		}
		out, err = h.Command(ctx, "ip", "route", "show", "default").Output()
		if err != nil || strings.TrimSpace(string(out)) != "" {
			t.Errorf("default route on %s: %q, %v; want none", h.Name, out, err)
		}
	}

	// b reaches a by its name, and a sees b's own address.
	srv, port := startServer(t, ctx, a)
	out, err := helper(ctx, b, "dial", "10s", a.Name+":"+port).Output()
	if err != nil {
		t.Fatalf("dial %s:%s from %s: %v", a.Name, port, b.Name, err)
	}
	want := fmt.Sprintf("server=%s peer=%s client=%s", a.Name, b.Addr, b.Name)
	if string(out) != want {
		t.Errorf("got %q, want %q", out, want)
	}
	if err := srv.Wait(); err != nil {
		t.Errorf("server: %v", err)
	}

	// The machine itself reaches a host at its address, from the gateway address.
	_, port = startServer(t, ctx, a)
	c, err := net.DialTimeout("tcp4", net.JoinHostPort(a.Addr.String(), port), 10*time.Second)
	if err != nil {
		t.Fatalf("dial %s from the machine: %v", a.Addr, err)
	}
	got, err := io.ReadAll(c)
	c.Close()
	if want := fmt.Sprintf("server=%s peer=%s", a.Name, n.Gateway); err != nil || string(got) != want {
		t.Errorf("from the machine: %q, %v; want %q", got, err, want)
	}

	// With a's link down, b cannot reach it; up again, it can.
	srv, port = startServer(t, ctx, a)
	if err := a.SetLink(false); err != nil {
		t.Fatal(err)
	}
	if out, err := helper(ctx, b, "dial", "500ms", a.Name+":"+port).CombinedOutput(); err == nil {
		t.Errorf("dial %s with its link down succeeded: %q", a.Name, out)
	}
	if err := a.SetLink(true); err != nil {
		t.Fatal(err)
	}
	out, err = helper(ctx, b, "dial", "10s", a.Name+":"+port).Output()
	if want := fmt.Sprintf("server=%s peer=%s client=%s", a.Name, b.Addr, b.Name); err != nil || string(out) != want {
		t.Errorf("after the link came back: %q, %v; want %q", out, err, want)
	}
	srv.Wait()
}

// leftovers lists what slot s still has on the machine.
func leftovers(t *testing.T, s int) []string {
	t.Helper()
	var left []string
	if ents, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), fmt.Sprintf("pp%d-", s)) {
				left = append(left, "/run/netns/"+e.Name())
			}
		}
	}
	if ents, err := os.ReadDir("/sys/class/net"); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), fmt.Sprintf("pp%dv", s)) {
				left = append(left, "veth "+e.Name())
			}
		}
	}
	if _, err := os.Stat(fmt.Sprintf("/sys/class/net/pp%dbr", s)); err == nil {
		left = append(left, fmt.Sprintf("bridge pp%dbr", s))
	}
	if _, err := os.Stat(slotDir(s)); err == nil {
		left = append(left, slotDir(s))
	}
	hosts, err := os.ReadFile(HostsFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(hosts), "\n") {
		if tag, ok := parseHostsLine(line); ok && tag.slot == s {
			left = append(left, HostsFile+": "+line)
		}
	}
	return left
}

// A test binary killed before its cleanup leaves its slot and names unlocked but
// its namespaces, bridge and hosts lines in place; the next network cleans them.
func TestStaleSlotIsCleaned(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip("netns: " + err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dead, err := Create(ctx, "nstest-c")
	if err != nil {
		t.Fatal(err)
	}
	// Drop the locks as a dying process would, without tearing down.
	dead.slotLock.Close()
	for _, f := range dead.nameLocks {
		f.Close()
	}
	dead.closed = true
	if len(leftovers(t, dead.Slot)) == 0 {
		t.Fatalf("slot %d: nothing on the machine after Create", dead.Slot)
	}

	n, err := Create(ctx, "nstest-c")
	if err != nil {
		t.Fatal(err)
	}
	hosts, _ := os.ReadFile(HostsFile)
	if c := strings.Count(string(hosts), "\tnstest-c\t"); c != 1 {
		t.Errorf("%s has %d lines for nstest-c, want 1:\n%s", HostsFile, c, hosts)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(t, n.Slot); len(left) > 0 {
		t.Errorf("slot %d after Close: %q", n.Slot, left)
	}
	if n.Slot != dead.Slot {
		// Another network took the lowest slot meanwhile; clean the dead one here.
		if f, ok, _ := lockTry(fmt.Sprintf("%s/slot-%d.lock", StateDir, dead.Slot)); ok {
			purgeSlot(dead.Slot)
			f.Close()
		}
		t.Logf("slot %d was taken by another network; the stale one was %d", n.Slot, dead.Slot)
	}
}

func TestPidsAndKillAll(t *testing.T) {
	n := New(t, "nstest-d")
	h := n.Hosts[0]
	// It prints once it runs inside the namespace, then becomes sleep (same pid).
	cmd := h.Command(context.Background(), "sh", "-c", "echo ready; exec sleep 600")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("sh on %s: %q, %v", h.Name, line, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	pids, err := h.Pids()
	if err != nil {
		t.Fatal(err)
	}
	if len(pids) != 1 || pids[0] != cmd.Process.Pid {
		t.Errorf("Pids = %v, want [%d]", pids, cmd.Process.Pid)
	}
	if err := n.KillAll(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("sleep ended with %v, want killed", err)
	}
	if pids, err := h.Pids(); err != nil || len(pids) != 0 {
		t.Errorf("after KillAll: Pids = %v, %v", pids, err)
	}
}
