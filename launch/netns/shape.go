package netns

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The tbf bucket: minBurst bytes, or a millisecond of traffic at the rate if
// that is more, so that high rates are not held back by timer wake-ups (here,
// a 64 KiB bucket lets a 10gbit link carry 6-8 Gbit/s, a millisecond's 9.6).
// Packets wait at most tbfLatency in tbf's queue before they are dropped.
const (
	minBurst   = 64 << 10
	tbfLatency = 50 * time.Millisecond
)

// maxDelay is the longest delay AddDelay accepts.
const maxDelay = 10 * time.Second

// netemLimit is the number of packets netem holds while delaying them: enough
// for a fast link's worth of a long delay (netem's default is 1000 packets).
const netemLimit = 100_000

func checkRate(bps uint64) error {
	if bps < MinRate || bps > MaxRate {
		return fmt.Errorf("netns: link rate %s (%d bit/s) is outside %s..%s", FormatRate(bps), bps, FormatRate(MinRate), FormatRate(MaxRate))
	}
	return nil
}

// tbfBurst is the bucket size in bytes for a rate in bits per second.
func tbfBurst(bps uint64) uint64 {
	return max(bps/8/1000, minBurst)
}

// tbfArgs are the arguments after "tc qdisc add dev X <parent>" that limit the
// rate to bps.
func tbfArgs(bps uint64) []string {
	return []string{"tbf", "rate", fmt.Sprintf("%dbit", bps), "burst", strconv.FormatUint(tbfBurst(bps), 10),
		"latency", fmt.Sprintf("%dms", tbfLatency.Milliseconds())}
}

// netemArgs are the arguments after "tc qdisc add dev X <parent>" that delay
// every packet by d.
func netemArgs(d time.Duration) []string {
	return []string{"netem", "delay", fmt.Sprintf("%dus", d.Microseconds()), "limit", strconv.Itoa(netemLimit)}
}

// LimitRate limits every host's link to bps bits per second each way: a tbf
// qdisc on the machine's end of its veth pair (Host.Veth) shapes what the host
// receives, and one on the host's eth0 what it sends. Calling it again sets a
// new rate. Set it before starting traffic: each end is briefly unshaped while
// its qdisc is replaced. It needs tc (iproute2).
func (n *Net) LimitRate(bps uint64) error {
	if err := checkRate(bps); err != nil {
		return err
	}
	tc, err := tcPath()
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return errors.New("netns: LimitRate on a closed network")
	}
	n.rate = bps
	return n.shape(tc)
}

// AddDelay delays every packet each host sends by d, with a netem qdisc on its
// eth0 (under which the rate limit, if any, goes): a round trip between two
// hosts then takes 2d longer, one between a host and the machine d. Calling it
// again sets a new delay. It needs tc and a kernel with netem; where netem is
// missing it returns DelayAvailable's error and changes nothing.
func (n *Net) AddDelay(d time.Duration) error {
	if d < time.Microsecond || d > maxDelay {
		return fmt.Errorf("netns: link delay %v is outside 1µs..%v", d, maxDelay)
	}
	tc, err := tcPath()
	if err != nil {
		return err
	}
	if err := DelayAvailable(); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return errors.New("netns: AddDelay on a closed network")
	}
	n.delay = d
	return n.shape(tc)
}

// shape puts the qdiscs for n.rate and n.delay on both ends of every host's
// link. n.mu is held.
func (n *Net) shape(tc string) error {
	for _, h := range n.Hosts {
		var cmds [][]string
		if n.rate > 0 {
			cmds = append(cmds, append([]string{"qdisc", "add", "dev", h.Veth, "root", "handle", "1:"}, tbfArgs(n.rate)...))
		}
		if err := replaceRoot(tc, h.Veth, nil, cmds); err != nil {
			return fmt.Errorf("netns: host %s, machine side: %w", h.Name, err)
		}
		ns := []string{"-n", h.nsName}
		cmds = nil
		switch {
		case n.delay > 0:
			cmds = append(cmds, append([]string{"qdisc", "add", "dev", "eth0", "root", "handle", "1:"}, netemArgs(n.delay)...))
			if n.rate > 0 {
				cmds = append(cmds, append([]string{"qdisc", "add", "dev", "eth0", "parent", "1:1", "handle", "10:"}, tbfArgs(n.rate)...))
			}
		case n.rate > 0:
			cmds = append(cmds, append([]string{"qdisc", "add", "dev", "eth0", "root", "handle", "1:"}, tbfArgs(n.rate)...))
		}
		if err := replaceRoot(tc, "eth0", ns, cmds); err != nil {
			return fmt.Errorf("netns: host %s, eth0 in %s: %w", h.Name, h.NetNS, err)
		}
	}
	return nil
}

// replaceRoot deletes dev's root qdisc, if it has one, and runs cmds (tc
// arguments, after pre) to put the new ones in place.
func replaceRoot(tc, dev string, pre []string, cmds [][]string) error {
	del := slices.Concat(pre, []string{"qdisc", "del", "dev", dev, "root"})
	// With no qdisc of its own, a device answers "Cannot delete qdisc with handle
	// of zero" (older kernels: "No such file or directory").
	if err := runTC(tc, del...); err != nil && !strings.Contains(err.Error(), "handle of zero") && !strings.Contains(err.Error(), "No such file or directory") {
		return err
	}
	for _, c := range cmds {
		if err := runTC(tc, slices.Concat(pre, c)...); err != nil {
			return err
		}
	}
	return nil
}

func runTC(tc string, args ...string) error {
	out, err := exec.Command(tc, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("tc %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// tcPath finds tc, which only link shaping needs.
func tcPath() (string, error) {
	p, err := exec.LookPath("tc")
	if err != nil {
		return "", fmt.Errorf("netns: tc not found: install iproute2 (%v)", err)
	}
	return p, nil
}

// errNoNetem is DelayAvailable's answer on a kernel without netem.
var errNoNetem = errors.New("netns: this kernel has no netem qdisc (sch_netem): --link-delay is not available here; modprobe sch_netem, or leave out --link-delay")

// DelayAvailable reports whether AddDelay can work here: it needs root, tc, and
// a kernel with the netem qdisc. It tries netem on the loopback device of a
// throwaway network namespace, which leaves nothing behind.
func DelayAvailable() error {
	if os.Geteuid() != 0 {
		return errors.New("netns: link delay needs root (CAP_NET_ADMIN)")
	}
	tc, err := tcPath()
	if err != nil {
		return err
	}
	args := append([]string{"--net", tc, "qdisc", "add", "dev", "lo", "root"}, netemArgs(time.Millisecond)...)
	out, err := exec.Command("unshare", args...).CombinedOutput()
	if err != nil {
		if bytes.Contains(out, []byte("kind is unknown")) {
			return errNoNetem
		}
		return fmt.Errorf("netns: trying netem: unshare %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}
