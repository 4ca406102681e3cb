package netns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StateDir holds the lock files and the UTS namespace bind mounts.
const StateDir = "/run/pplaunch-netns"

// HostsFile is where host names are published to every namespace.
const HostsFile = "/etc/hosts"

const maxSlot = 250

// Net is a private test network: a bridge on the machine and one namespace per host.
type Net struct {
	Slot    int          // S in the names and addresses below
	Prefix  netip.Prefix // 10.77.S.0/24
	Gateway netip.Addr   // 10.77.S.254, the bridge: the machine's own address on the net
	Bridge  string       // bridge interface, ppSbr
	Hosts   []*Host      // in the order the names were given; Hosts[i].Addr is 10.77.S.(i+1)

	mu        sync.Mutex
	slotLock  *os.File
	nameLocks []*os.File
	closed    bool
	rate      uint64        // LimitRate's, in bit/s; 0 if unlimited
	delay     time.Duration // AddDelay's; 0 if none
}

// Host is one simulated machine.
type Host struct {
	Name  string     // host name, as hostname(1) prints it inside, and resolvable everywhere
	Addr  netip.Addr // address of its eth0
	NetNS string     // path of the network namespace, for nsenter --net
	UTS   string     // path of the UTS namespace, for nsenter --uts
	Veth  string     // the machine-side end of its veth pair, in the bridge

	nsName string // name under /run/netns
}

// Available reports why namespaces cannot be created here, or nil if they can.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("network namespaces need root (run the tests as root, as CI does)")
	}
	for _, p := range []string{"ip", "nsenter", "unshare", "hostname"} {
		if _, err := exec.LookPath(p); err != nil {
			return fmt.Errorf("%s not found (install iproute2, util-linux and hostname): %v", p, err)
		}
	}
	// Opening for append changes nothing; it only asks whether we may.
	f, err := os.OpenFile(HostsFile, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("host names go in %s, which cannot be written: %v", HostsFile, err)
	}
	f.Close()
	out, err := exec.Command("unshare", "--net", "--uts", "true").CombinedOutput()
	if err != nil {
		return fmt.Errorf("cannot create network and UTS namespaces: unshare --net --uts: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

// TB is the part of testing.TB that New uses; *testing.T and *testing.B satisfy
// it. The package takes this rather than testing.TB so that it does not import
// package testing, which would be linked into pplaunch itself.
type TB interface {
	Helper()
	Skip(args ...any)
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
	Cleanup(func())
}

// New builds a network with one host per name for the test, and tears it down in
// t.Cleanup. It skips the test, saying why, where namespaces are not available.
// Register cleanups of processes running in the hosts after calling New, so they
// run (and the processes end) before the network goes.
func New(t TB, names ...string) *Net {
	t.Helper()
	if err := Available(); err != nil {
		t.Skip("netns: " + err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	n, err := Create(ctx, names...)
	if err != nil {
		t.Fatalf("netns: %v", err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("netns: teardown: %v", err)
		}
	})
	for _, h := range n.Hosts {
		t.Logf("netns: host %s at %s (netns %s), machine side %s on %s", h.Name, h.Addr, h.nsName, n.Gateway, n.Bridge)
	}
	return n
}

// Create builds a network with one host per name. ctx bounds the wait for host
// names that another network holds. The caller must Close it.
func Create(ctx context.Context, names ...string) (*Net, error) {
	if err := checkNames(names); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(StateDir, 0o755); err != nil {
		return nil, err
	}
	n := &Net{}
	if err := n.lockNames(ctx, names); err != nil {
		n.Close()
		return nil, err
	}
	if err := n.takeSlot(); err != nil {
		n.Close()
		return nil, err
	}
	if err := n.build(names); err != nil {
		if cerr := n.Close(); cerr != nil {
			err = fmt.Errorf("%w (and teardown: %v)", err, cerr)
		}
		return nil, err
	}
	return n, nil
}

// Nsenter is the command prefix that runs a program on h: append the program and
// its arguments. Scripts use it too (for example as mpirun's rsh agent).
func (h *Host) Nsenter() []string {
	return []string{"nsenter", "--net=" + h.NetNS, "--uts=" + h.UTS, "--"}
}

// Command prepares prog to run on h. nsenter execs prog in place (it does not
// fork without --pid), so the Cmd's process is prog itself and signals reach it.
func (h *Host) Command(ctx context.Context, prog string, args ...string) *exec.Cmd {
	argv := append(h.Nsenter(), prog)
	return exec.CommandContext(ctx, argv[0], append(argv[1:], args...)...)
}

// SetLink takes h's link down (a network partition: its connections time out) or
// back up.
func (h *Host) SetLink(up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	return ip("link", "set", h.Veth, state)
}

// Pids lists the live processes in h's network namespace (zombies excluded).
func (h *Host) Pids() ([]int, error) {
	var want syscall.Stat_t
	if err := syscall.Stat(h.NetNS, &want); err != nil {
		if os.IsNotExist(err) {
			return nil, nil // not created yet, or gone: nothing can run in it
		}
		return nil, fmt.Errorf("host %s: %w", h.Name, err)
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st) != nil || st.Ino != want.Ino || st.Dev != want.Dev {
			continue
		}
		if live(pid) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// live reports whether pid exists and is not a zombie. PID 1 here may be slow to
// reap orphans, so kill -0 is not enough.
func live(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] != 'Z' && stat[i+2] != 'X'
}

// KillAll sends SIGKILL to every process left in the hosts' namespaces (daemons'
// detached children, say) and waits until they are gone or timeout passes.
func (n *Net) KillAll(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		var left []string
		for _, h := range n.Hosts {
			pids, err := h.Pids()
			if err != nil {
				return err
			}
			for _, pid := range pids {
				syscall.Kill(pid, syscall.SIGKILL)
				left = append(left, fmt.Sprintf("%s:%d", h.Name, pid))
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("netns: processes still alive %v after SIGKILL: %s", timeout, strings.Join(left, " "))
		}
		<-tick.C
	}
}

// Close ends every process left in the hosts (SIGKILL), then removes the network:
// veths, namespaces, bridge, /etc/hosts lines, locks. Stop your processes
// gracefully before, if that matters. Close is safe to call twice.
func (n *Net) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	var errs []error
	errs = append(errs, n.KillAll(10*time.Second))
	if n.slotLock != nil {
		errs = append(errs, purgeSlot(n.Slot))
		errs = append(errs, n.slotLock.Close())
	}
	for _, f := range n.nameLocks {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

func checkNames(names []string) error {
	if len(names) == 0 || len(names) > 253 {
		return fmt.Errorf("netns: need 1 to 253 host names, got %d", len(names))
	}
	seen := map[string]bool{}
	for _, name := range names {
		if !validHostName(name) {
			return fmt.Errorf("netns: host name %q: want 1-63 of a-z, 0-9 and '-', starting with a letter", name)
		}
		if seen[name] {
			return fmt.Errorf("netns: host name %q given twice", name)
		}
		seen[name] = true
	}
	return nil
}

func validHostName(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] < 'a' || s[0] > 'z' || s[len(s)-1] == '-' {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// lockNames takes each name's lock, in sorted order so that two networks asking
// for overlapping names cannot deadlock, then drops /etc/hosts lines left for
// those names by dead holders.
func (n *Net) lockNames(ctx context.Context, names []string) error {
	sorted := slices.Sorted(slices.Values(names))
	for _, name := range sorted {
		f, err := lockWait(ctx, filepath.Join(StateDir, "name-"+name+".lock"))
		if err != nil {
			return fmt.Errorf("netns: host name %s is in use by another test network: %w", name, err)
		}
		n.nameLocks = append(n.nameLocks, f)
	}
	return editHosts(func(content string) (string, error) {
		for _, name := range names {
			if line, ok := foreignLine(content, name); ok {
				return "", fmt.Errorf("netns: %s already names host %s outside this harness: %q", HostsFile, name, line)
			}
		}
		return dropLines(content, func(t hostsTag) bool { return slices.Contains(names, t.name) }), nil
	})
}

// takeSlot finds a slot whose lock is free and whose subnet no interface uses.
func (n *Net) takeSlot() error {
	for s := 1; s <= maxSlot; s++ {
		f, ok, err := lockTry(filepath.Join(StateDir, fmt.Sprintf("slot-%d.lock", s)))
		if err != nil {
			return fmt.Errorf("netns: %w", err)
		}
		if !ok {
			continue
		}
		// The lock was free, so whatever slot s left behind belongs to a dead process.
		if err := purgeSlot(s); err != nil {
			f.Close()
			return fmt.Errorf("netns: cleaning what a dead test left in slot %d: %w", s, err)
		}
		used, err := exec.Command("ip", "-o", "-4", "addr", "show").Output()
		if err != nil {
			f.Close()
			return fmt.Errorf("netns: ip addr show: %v", err)
		}
		if bytes.Contains(used, fmt.Appendf(nil, " 10.77.%d.", s)) {
			f.Close()
			continue
		}
		n.Slot, n.slotLock = s, f
		n.Prefix = netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 77, byte(s), 0}), 24)
		n.Gateway = netip.AddrFrom4([4]byte{10, 77, byte(s), 254})
		n.Bridge = fmt.Sprintf("pp%dbr", s)
		return nil
	}
	return fmt.Errorf("netns: all %d slots (10.77.1-%d.0/24) are taken", maxSlot, maxSlot)
}

func (n *Net) build(names []string) error {
	s := n.Slot
	if err := ip("link", "add", n.Bridge, "type", "bridge"); err != nil {
		return err
	}
	if err := ip("addr", "add", n.Gateway.String()+"/24", "dev", n.Bridge); err != nil {
		return err
	}
	if err := ip("link", "set", n.Bridge, "up"); err != nil {
		return err
	}
	if err := os.MkdirAll(slotDir(s), 0o755); err != nil {
		return err
	}
	var lines strings.Builder
	for i, name := range names {
		h := &Host{
			Name:   name,
			Addr:   netip.AddrFrom4([4]byte{10, 77, byte(s), byte(i + 1)}),
			nsName: fmt.Sprintf("pp%d-%s", s, name),
			Veth:   fmt.Sprintf("pp%dv%d", s, i+1),
			UTS:    filepath.Join(slotDir(s), name+".uts"),
		}
		h.NetNS = "/run/netns/" + h.nsName
		n.Hosts = append(n.Hosts, h)
		peer := fmt.Sprintf("pp%dp%d", s, i+1)
		for _, args := range [][]string{
			{"netns", "add", h.nsName},
			{"link", "add", h.Veth, "type", "veth", "peer", "name", peer, "netns", h.nsName},
			{"link", "set", h.Veth, "master", n.Bridge, "up"},
			{"-n", h.nsName, "link", "set", peer, "name", "eth0"},
			{"-n", h.nsName, "addr", "add", h.Addr.String() + "/24", "dev", "eth0"},
			{"-n", h.nsName, "link", "set", "eth0", "up"},
			{"-n", h.nsName, "link", "set", "lo", "up"},
		} {
			if err := ip(args...); err != nil {
				return fmt.Errorf("host %s: %w", name, err)
			}
		}
		if err := os.WriteFile(h.UTS, nil, 0o644); err != nil {
			return err
		}
		// unshare keeps the new UTS namespace alive by bind-mounting it on h.UTS.
		if out, err := exec.Command("unshare", "--uts="+h.UTS, "hostname", name).CombinedOutput(); err != nil {
			return fmt.Errorf("host %s: unshare --uts=%s hostname %s: %v: %s", name, h.UTS, name, err, bytes.TrimSpace(out))
		}
		lines.WriteString(hostsTag{slot: s, name: name}.line(h.Addr))
	}
	return editHosts(func(content string) (string, error) {
		if content != "" && !strings.HasSuffix(content, "\n") {
			content += "\n"
		}
		return content + lines.String(), nil
	})
}

func slotDir(s int) string { return filepath.Join(StateDir, fmt.Sprintf("slot-%d", s)) }

// purgeSlot removes everything slot s may have: processes left in its
// namespaces, UTS mounts, veths, namespaces, the bridge and /etc/hosts lines.
// Missing pieces are not errors.
func purgeSlot(s int) error {
	var errs []error
	dir := slotDir(s)
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && err != syscall.EINVAL && err != syscall.ENOENT {
				errs = append(errs, fmt.Errorf("umount %s: %v", p, err))
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	if ents, err := os.ReadDir("/sys/class/net"); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), fmt.Sprintf("pp%dv", s)) || e.Name() == fmt.Sprintf("pp%dbr", s) {
				errs = append(errs, ipIgnoreMissing("link", "del", e.Name()))
			}
		}
	}
	if ents, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), fmt.Sprintf("pp%d-", s)) {
				// A dead test's daemons may still run in it, cut off; end them.
				stale := &Net{Hosts: []*Host{{Name: e.Name(), NetNS: "/run/netns/" + e.Name()}}}
				errs = append(errs, stale.KillAll(10*time.Second))
				errs = append(errs, ipIgnoreMissing("netns", "del", e.Name()))
			}
		}
	}
	errs = append(errs, editHosts(func(content string) (string, error) {
		return dropLines(content, func(t hostsTag) bool { return t.slot == s }), nil
	}))
	return errors.Join(errs...)
}

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

func ipIgnoreMissing(args ...string) error {
	err := ip(args...)
	if err != nil && (strings.Contains(err.Error(), "Cannot find device") || strings.Contains(err.Error(), "No such file")) {
		return nil
	}
	return err
}

// editHosts rewrites /etc/hosts under a lock shared by every network. The file is
// rewritten in place, not renamed over, since containers often bind-mount it.
func editHosts(edit func(string) (string, error)) error {
	lock, err := lockWait(context.Background(), filepath.Join(StateDir, "hosts.lock"))
	if err != nil {
		return err
	}
	defer lock.Close()
	old, err := os.ReadFile(HostsFile)
	if err != nil {
		return err
	}
	content, err := edit(string(old))
	if err != nil || content == string(old) {
		return err
	}
	return os.WriteFile(HostsFile, []byte(content), 0o644)
}

// lockTry takes an exclusive flock on path without waiting. The lock lives as
// long as the returned file stays open, and dies with the process.
func lockTry(path string) (*os.File, bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if err == syscall.EWOULDBLOCK {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("flock %s: %v", path, err)
	}
	return f, true, nil
}

// lockWait takes the lock on path, polling until ctx ends.
func lockWait(ctx context.Context, path string) (*os.File, error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		f, ok, err := lockTry(path)
		if err != nil || ok {
			return f, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for lock %s: %w", path, ctx.Err())
		case <-tick.C:
		}
	}
}
