package netns

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestTBFArgs(t *testing.T) {
	for _, tc := range []struct {
		bps  uint64
		want string
	}{
		{MinRate, "tbf rate 10000bit burst 65536 latency 50ms"},
		{100_000_000, "tbf rate 100000000bit burst 65536 latency 50ms"},
		{1_000_000_000, "tbf rate 1000000000bit burst 125000 latency 50ms"},
		{10_000_000_000, "tbf rate 10000000000bit burst 1250000 latency 50ms"},
		{40_000_000_000, "tbf rate 40000000000bit burst 5000000 latency 50ms"},
		{MaxRate, "tbf rate 1000000000000bit burst 125000000 latency 50ms"},
	} {
		if got := strings.Join(tbfArgs(tc.bps), " "); got != tc.want {
			t.Errorf("tbfArgs(%d) = %q, want %q", tc.bps, got, tc.want)
		}
	}
	if got, want := strings.Join(netemArgs(1500*time.Microsecond), " "), "netem delay 1500us limit 100000"; got != want {
		t.Errorf("netemArgs(1.5ms) = %q, want %q", got, want)
	}
}

// LimitRate and AddDelay check their argument and look for tc before they touch
// anything, so they need no network to answer.
func TestShapeRefusals(t *testing.T) {
	n := &Net{}
	for _, bps := range []uint64{0, MinRate - 1, MaxRate + 1} {
		if err := n.LimitRate(bps); err == nil || !strings.Contains(err.Error(), "outside") {
			t.Errorf("LimitRate(%d) = %v, want an error saying it is outside the range", bps, err)
		}
	}
	for _, d := range []time.Duration{0, -time.Millisecond, time.Minute} {
		if err := n.AddDelay(d); err == nil || !strings.Contains(err.Error(), "outside") {
			t.Errorf("AddDelay(%v) = %v, want an error saying it is outside the range", d, err)
		}
	}
	t.Setenv("PATH", t.TempDir())
	for name, err := range map[string]error{
		"LimitRate":      n.LimitRate(1_000_000_000),
		"AddDelay":       n.AddDelay(time.Millisecond),
		"DelayAvailable": DelayAvailable(),
	} {
		if os.Geteuid() != 0 && name == "DelayAvailable" {
			continue // it says root is needed first
		}
		if err == nil || !strings.Contains(err.Error(), "tc not found: install iproute2") {
			t.Errorf("%s without tc: %v, want it to say tc is not found", name, err)
		}
	}
}

// receive reads c to its end and returns the bytes and the time from start,
// which the caller takes before the sender can have sent a byte (before the
// port is announced, or the sender started). So the time counts the whole
// transfer and any stall of either process on a loaded machine: the rate
// can only come out lower than the link's, never higher. (Started at the
// first byte instead, a receiver that stalled after it would find the bytes
// that arrived meanwhile waiting, and count them as a burst above the rate.)
func receive(c net.Conn, start time.Time) (int64, time.Duration, error) {
	buf := make([]byte, 256<<10)
	var n int64
	for {
		k, err := c.Read(buf)
		n += int64(k)
		if err == io.EOF {
			return n, time.Since(start), nil
		}
		if err != nil {
			return n, time.Since(start), err
		}
	}
}

// send writes size bytes to c and closes it.
func send(c net.Conn, size int64) error {
	_, err := io.Copy(c, io.LimitReader(zeros{}, size))
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	return err
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// sink accepts one connection, receives it, and prints "bytes nanoseconds".
func sink() int {
	start := time.Now() // before the port is announced: no byte can have come
	c, ok := acceptOne()
	if !ok {
		return 1
	}
	n, d, err := receive(c, start)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("%d %d\n", n, d.Nanoseconds())
	return 0
}

// source sends size bytes to addr.
func source(addr, size string) int {
	n, err := strconv.ParseInt(size, 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	c, err := net.DialTimeout("tcp4", addr, 10*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := send(c, n); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// listen accepts connections and closes them, until killed.
func listen() int {
	ln, ok := listenAnnounced()
	if !ok {
		return 1
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		c.Close()
	}
}

// connect dials addr count times and prints the quickest connect, in nanoseconds.
func connect(addr, count string) int {
	k, err := strconv.Atoi(count)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	best := time.Duration(-1)
	for range k {
		start := time.Now()
		c, err := net.DialTimeout("tcp4", addr, 10*time.Second)
		d := time.Since(start)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		c.Close()
		if best < 0 || d < best {
			best = d
		}
	}
	fmt.Println(best.Nanoseconds())
	return 0
}

// startHelper runs a helper that prints "port P" first, and returns it with
// the rest of its output and the port.
func startHelper(t *testing.T, ctx context.Context, h *Host, mode string) (*exec.Cmd, *bufio.Reader, string) {
	t.Helper()
	cmd := helper(ctx, h, mode)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("%s on %s: %v", mode, h.Name, err)
	}
	return cmd, r, strings.TrimPrefix(strings.TrimSpace(line), "port ")
}

// throughput sends size bytes from one end to the other and returns the rate
// the receiver saw, in bits per second. A nil host is the machine itself.
func throughput(t *testing.T, ctx context.Context, n *Net, from, to *Host, size int64) float64 {
	t.Helper()
	var got int64
	var took time.Duration
	if to == nil {
		ln, err := net.Listen("tcp4", net.JoinHostPort(n.Gateway.String(), "0"))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		src := helper(ctx, from, "source", n.Gateway.String()+":"+port, strconv.FormatInt(size, 10))
		start := time.Now() // before the source runs: no byte can have come
		if err := src.Start(); err != nil {
			t.Fatal(err)
		}
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		got, took, err = receive(c, start)
		c.Close()
		if err != nil {
			t.Fatalf("receiving from %s: %v", from.Name, err)
		}
		if err := src.Wait(); err != nil {
			t.Fatalf("source on %s: %v", from.Name, err)
		}
	} else {
		snk, out, port := startHelper(t, ctx, to, "sink")
		addr := net.JoinHostPort(to.Addr.String(), port)
		if from == nil {
			c, err := net.DialTimeout("tcp4", addr, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if err := send(c, size); err != nil {
				t.Fatalf("sending to %s: %v", to.Name, err)
			}
		} else if err := helper(ctx, from, "source", addr, strconv.FormatInt(size, 10)).Run(); err != nil {
			t.Fatalf("source on %s: %v", from.Name, err)
		}
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("sink on %s: %v", to.Name, err)
		}
		if err := snk.Wait(); err != nil {
			t.Fatalf("sink on %s: %v", to.Name, err)
		}
		var ns int64
		if _, err := fmt.Sscanf(line, "%d %d", &got, &ns); err != nil {
			t.Fatalf("sink on %s said %q: %v", to.Name, line, err)
		}
		took = time.Duration(ns)
	}
	if got < size/2 || took <= 0 {
		t.Fatalf("received %d of %d bytes in %v", got, size, took)
	}
	return float64(got) * 8 / took.Seconds()
}

func name(h *Host) string {
	if h == nil {
		return "machine"
	}
	return h.Name
}

func TestLimitRate(t *testing.T) {
	n := New(t, "nstest-e", "nstest-f")
	a, b := n.Hosts[0], n.Hosts[1]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const limit = 200_000_000
	const size = 5 << 20 // 0.2s at the limit

	// Unshaped, a veth pair does several Gbit/s even on a loaded machine.
	if r := throughput(t, ctx, n, b, a, 8*size); r < 2*limit {
		t.Skipf("unlimited, %s to %s did %.0f Mbit/s, not well above %s: on a machine this loaded the test cannot tell the limit from the machine", b.Name, a.Name, r/1e6, FormatRate(limit))
	} else {
		t.Logf("unlimited: %s to %s %.0f Mbit/s", b.Name, a.Name, r/1e6)
	}

	if err := n.LimitRate(limit); err != nil {
		t.Fatal(err)
	}
	// Calling it again replaces the qdiscs rather than failing on them.
	if err := n.LimitRate(limit); err != nil {
		t.Fatalf("LimitRate again: %v", err)
	}
	for _, h := range n.Hosts {
		for _, argv := range [][]string{
			{"tc", "qdisc", "show", "dev", h.Veth},
			{"tc", "-n", h.nsName, "qdisc", "show", "dev", "eth0"},
		} {
			out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "qdisc tbf 1: root") || !strings.Contains(string(out), "rate 200Mbit") {
				t.Errorf("%s: %q, %v; want a root tbf at 200Mbit", strings.Join(argv, " "), out, err)
			}
		}
	}

	// Host to host goes through the sender's eth0 and the receiver's veth; the
	// machine to a host through the host's veth alone, a host to the machine
	// through its eth0 alone. tbf lets through no more than its rate after the
	// first burst (a few tens of KB of 5 MB), and the time is measured from
	// before the first byte (receive), so 1.3× can only be exceeded by a
	// missing limit. A loaded machine only lowers the rate, so no lower bound
	// is asserted: it would fail on the machine, not on the limit.
	for _, p := range [][2]*Host{{b, a}, {a, b}, {nil, a}, {a, nil}} {
		r := throughput(t, ctx, n, p[0], p[1], size)
		t.Logf("limited to %s: %s to %s %.1f Mbit/s", FormatRate(limit), name(p[0]), name(p[1]), r/1e6)
		if r > 1.3*limit || r <= 0 {
			t.Errorf("limited to %s: %s to %s did %.1f Mbit/s, want at most 1.3× the limit", FormatRate(limit), name(p[0]), name(p[1]), r/1e6)
		}
	}

	// Close takes the qdiscs with the veths and namespaces.
	n.KillAll(10 * time.Second)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(t, n.Slot); len(left) > 0 {
		t.Errorf("slot %d after Close: %q", n.Slot, left)
	}
	out, err := exec.Command("tc", "qdisc", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("tc qdisc show: %v: %s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if slices.ContainsFunc(n.Hosts, func(h *Host) bool { return strings.Contains(line, " dev "+h.Veth+" ") }) {
			t.Errorf("after Close: %s", line)
		}
	}
	if err := n.LimitRate(limit); err == nil {
		t.Errorf("LimitRate on a closed network succeeded")
	}
}

func TestDelay(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip("netns: " + err.Error())
	}
	if _, err := tcPath(); err != nil {
		t.Skip(err)
	}
	probe := DelayAvailable()
	if probe != nil {
		// Tell a kernel without netem from a probe that went wrong otherwise.
		out, _ := exec.Command("unshare", "--net", "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms").CombinedOutput()
		if !strings.Contains(string(out), "unknown") {
			t.Fatalf("DelayAvailable: %v, but tc said %q", probe, out)
		}
		if !strings.Contains(probe.Error(), "no netem qdisc") || !strings.Contains(probe.Error(), "--link-delay") {
			t.Errorf("DelayAvailable on a kernel without netem: %q, want it to say netem is missing and name --link-delay", probe)
		}
		n := New(t, "nstest-g")
		if err := n.LimitRate(1_000_000_000); err != nil {
			t.Fatal(err)
		}
		if err := n.AddDelay(time.Millisecond); err == nil || err.Error() != probe.Error() {
			t.Errorf("AddDelay without netem: %v, want %q", err, probe)
		}
		// The rate limit stays as it was.
		h := n.Hosts[0]
		out, err := exec.Command("tc", "-n", h.nsName, "qdisc", "show", "dev", "eth0").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "qdisc tbf 1: root") {
			t.Errorf("eth0 of %s after a refused AddDelay: %q, %v; want the tbf still there", h.Name, out, err)
		}
		t.Logf("no netem here: %v", probe)
		return
	}

	// netem is there: a round trip between two hosts takes 2d longer.
	n := New(t, "nstest-g", "nstest-h")
	a, b := n.Hosts[0], n.Hosts[1]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _, port := startHelper(t, ctx, a, "listen")
	addr := net.JoinHostPort(a.Addr.String(), port)
	rtt := func() time.Duration {
		t.Helper()
		out, err := helper(ctx, b, "connect", addr, "5").Output()
		if err != nil {
			t.Fatalf("connect from %s to %s: %v", b.Name, addr, err)
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
		if err != nil {
			t.Fatalf("connect said %q: %v", out, err)
		}
		return time.Duration(ns)
	}
	const d = 25 * time.Millisecond
	before := rtt()
	if err := n.AddDelay(d); err != nil {
		t.Fatal(err)
	}
	after := rtt()
	t.Logf("connect from %s to %s: %v, with a delay of %v each way %v", b.Name, a.Name, before, d, after)
	// netem holds every packet at least d, so a connect (SYN there, SYN-ACK
	// back) takes at least 2d whatever the load: only a missing delay makes
	// it shorter. A loaded machine only makes it longer, so no upper bound on
	// the time is asserted; the qdisc's own account says the delay is d.
	if before >= d {
		t.Skipf("connect took %v before the delay, not much below %v: on a machine this loaded the test cannot tell the delay from the machine", before, d)
	}
	if after < 2*d*9/10 {
		t.Errorf("connect with a delay of %v each way took %v, want at least %v", d, after, 2*d)
	}
	if out, err := exec.Command("tc", "-n", a.nsName, "qdisc", "show", "dev", "eth0").CombinedOutput(); err != nil || !strings.Contains(string(out), fmt.Sprint("delay ", d)) {
		t.Errorf("eth0 of %s: %q, %v; want netem with delay %v", a.Name, out, err, d)
	}
	// The rate limit goes under the delay, and the delay stays.
	if err := n.LimitRate(1_000_000_000); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("tc", "-n", a.nsName, "qdisc", "show", "dev", "eth0").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "qdisc netem 1: root") || !strings.Contains(string(out), "qdisc tbf 10: parent 1:1") {
		t.Errorf("eth0 of %s with delay and rate: %q, %v; want netem at the root and tbf under it", a.Name, out, err)
	}
	if after := rtt(); after < 2*d*9/10 {
		t.Errorf("connect after LimitRate took %v, want the delay of %v each way kept", after, d)
	}
}
