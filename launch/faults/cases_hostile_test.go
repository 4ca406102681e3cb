package faults

import (
	"context"
	endian "encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/store"
)

// The hostile cases: connections from outside the job (without its token)
// to the store and to the ranks' listeners, and the token itself.

// strangerWhileConnecting waits for rank 1 to stop itself before it
// connects (PPLAUNCH_TEST_STOP=1, stopBeforeConnect), opens a connection to
// rank 0's listener that sends hello (nothing: a silent one) and stays open,
// then continues rank 1: rank 0 must admit it meanwhile and the job finish.
func strangerWhileConnecting(hello []byte) func(*testing.T, *env, *job) {
	return func(t *testing.T, _ *env, j *job) {
		r1 := j.rankPID(1)
		if r1 == 0 || !j.waitFor(time.Minute, func() bool { return procState(r1) == "T" }) {
			t.Errorf("rank 1 (pid %d) did not stop before connecting", r1)
			return
		}
		defer syscall.Kill(r1, syscall.SIGCONT)
		r0 := j.rankPID(0)
		var addrs []string
		if r0 == 0 || !j.waitFor(30*time.Second, func() bool { addrs = listeners(r0); return len(addrs) > 0 }) {
			t.Errorf("rank 0 (pid %d) never listened", r0)
			return
		}
		c, err := net.Dial("tcp", addrs[0])
		if err != nil {
			t.Errorf("connect to rank 0's listener %s: %v", addrs[0], err)
			return
		}
		c.Write(hello)
		j.fault()
		// Open until the job ends; closed when this goroutine returns.
		go func() { j.waitFor(10*time.Minute, func() bool { return false }); c.Close() }()
	}
}

// stopBeforeConnect makes rank 1 stop itself once it joined the store.
var stopBeforeConnect = []string{"PPLAUNCH_TEST_STOP=1"}

// silentStoreThenRestart waits for rank 0 to hold before its step, opens
// silentConns connections to the store that never say a word, reads the
// store's greeting on every one and checks that all are still open then
// (the store runs all their handshakes at once: had it queued them behind a
// few at a time, the later ones would be greeted only once earlier ones had
// been dropped at their deadline), keeps them open, and SIGKILLs rank 1: the
// restarted group's ranks must join the store past them.
func silentStoreThenRestart(t *testing.T, _ *env, j *job) {
	if !j.waitLine("waiting for a preemption signal") {
		return
	}
	addrs := listeners(j.cmds[0].Process.Pid)
	r1 := j.rankPID(1)
	if len(addrs) == 0 || r1 == 0 {
		t.Errorf("the agent listens on nothing (%v), or rank 1 is gone", addrs)
		return
	}
	conns := make([]net.Conn, silentConns)
	for i := range conns {
		c, err := net.Dial("tcp", addrs[0])
		if err != nil {
			t.Errorf("connect to the store at %s: %v", addrs[0], err)
			return
		}
		conns[i] = c
		go func() { j.waitFor(10*time.Minute, func() bool { return false }); c.Close() }()
	}
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(time.Minute)) // a hang guard
		if _, err := io.ReadFull(c, make([]byte, 4+store.NonceLen)); err != nil {
			t.Errorf("silent connection %d was never greeted by the store: %v", i, err)
			return
		}
	}
	open := 0
	for _, c := range conns {
		// A poll: a connection the store closed reads its end at once, an
		// open one has nothing to read. (A deadline already past would fail
		// the read before it looked.)
		c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		var ne net.Error
		if _, err := c.Read(make([]byte, 1)); errors.As(err, &ne) && ne.Timeout() {
			open++
		}
	}
	if open != silentConns {
		t.Errorf("once the store had greeted all %d silent connections, %d were open: it did not hold them all at once", silentConns, open)
	}
	j.fault()
	syscall.Kill(r1, syscall.SIGKILL)
}

// silentConns is how many silent connections silentStoreThenRestart opens.
const silentConns = 200

// hugeFrames is the number of token-less connections hugeFrameAttack opens
// at once, and rssBound what they may add to the agent's resident memory.
// Each announces a frame of 32 MiB: a server that allocated for the frame
// before the hello would grow by about hugeFrames × 32 MiB = 960 MiB; the
// hello's bound (store.MaxHello bytes per connection) keeps it at kilobytes.
const (
	hugeFrames = 30
	rssBound   = 32 << 20
)

// hugeFrameAttack waits for rank 0 to hold before its step, reads the
// agent's VmRSS, opens hugeFrames connections to its store at once, each
// sending the store's magic, a nonce and then frame headers announcing 32 MiB
// and 1 MiB of payload, waits until the store has closed every one, and
// compares the agent's VmRSS and peak (VmHWM) with the first reading. Then it
// sends SIGUSR1, which ends the hold.
func hugeFrameAttack(t *testing.T, _ *env, j *job) {
	if !j.waitLine("waiting for a preemption signal") {
		return
	}
	agent := j.cmds[0].Process.Pid
	defer j.cmds[0].Process.Signal(syscall.SIGUSR1)
	addrs := listeners(agent)
	if len(addrs) == 0 {
		t.Errorf("the agent (pid %d) listens on nothing", agent)
		return
	}
	before, err := vm(agent, "VmRSS")
	if err != nil {
		t.Error(err)
		return
	}
	j.fault()
	frame := make([]byte, 1<<20)
	for i := 0; i+4 <= len(frame); i += 4 {
		endian.BigEndian.PutUint32(frame[i:], 32<<20)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	refused := 0
	for range hugeFrames {
		wg.Go(func() {
			c, err := net.Dial("tcp", addrs[0])
			if err != nil {
				t.Errorf("connect to the store at %s: %v", addrs[0], err)
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(2 * store.HandshakeTimeout))
			hello := append([]byte("PPS2"), make([]byte, store.NonceLen)...)
			c.Write(append(append(hello, 0xFF), frame...)) // the store stops reading long before the end
			// Until the store closes it (EOF, or a reset for the unread rest).
			if _, err := io.Copy(io.Discard, c); errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("the store kept a token-less connection open for %v", 2*store.HandshakeTimeout)
				return
			}
			mu.Lock()
			refused++
			mu.Unlock()
		})
	}
	wg.Wait()
	after, err1 := vm(agent, "VmRSS")
	peak, err2 := vm(agent, "VmHWM")
	if err1 != nil || err2 != nil {
		t.Error(err1, err2)
		return
	}
	t.Logf("agent VmRSS %d KiB before %d token-less connections announcing 32 MiB frames, %d KiB after (peak %d KiB); bound +%d KiB",
		before>>10, refused, after>>10, peak>>10, rssBound>>10)
	if after > before+rssBound || peak > before+rssBound {
		t.Errorf("the agent's memory grew from %d KiB to %d KiB (peak %d KiB) for %d token-less connections; bound: %d KiB more",
			before>>10, after>>10, peak>>10, hugeFrames, rssBound>>10)
	}
}

// forge tries what an outsider who knows only the endpoint would: join the
// store without the token and write a failure record of his own. The store
// must refuse the connection (naming the wrong token); were it admitted, the
// record would stop the job with the forged text as its root cause.
func forge(t *testing.T, e *env, j *job) {
	if !j.waitLine("waiting for a preemption signal") {
		return
	}
	defer j.cmds[0].Process.Signal(syscall.SIGUSR1)
	j.fault()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := store.Dial(ctx, e.rdzv, "not-the-job-token", "agent/")
	if err == nil {
		defer cl.Close()
		b, _ := json.Marshal(map[string]any{"node": 1, "rank": 1, "code": 9, "how": "forged by the fault suite", "final": true})
		cl.CompareAndSet(ctx, "attempt/0/failed", nil, b)
		t.Errorf("the store admitted a client without the job's token")
		return
	}
	if !strings.Contains(err.Error(), store.WrongToken) {
		t.Errorf("refused, but not for the token: %v", err)
	}
}

var hostileCases = []fcase{
	{name: "hostile/silent-connection-to-rank-listener", args: steps(3), env: stopBeforeConnect, during: strangerWhileConnecting(nil), code: 0,
		want: []string{`summary: steps 1\.\.3`}},
	// A stranger's hello to a rank's listener is refused and logged.
	{name: "hostile/stranger-to-rank-listener-logged", args: steps(3), env: stopBeforeConnect, during: strangerWhileConnecting([]byte("GET / HTTP/1.1\r\n\r\n")), code: 0,
		want: []string{`summary: steps 1\.\.3`, `\[rank 0\] .*rank 0: link listener \S+: refused connection from 127\.0\.0\.1:\d+: not a pplaunch \S+ hello`}},
	// 200 silent connections to the store, all greeted and open at once, do
	// not hold up the restarted group: it joins past them and finishes.
	{name: "hostile/200-silent-connections-to-store-then-restart", ckpt: true, restarts: 1, args: steps(4), env: hold(0, 2),
		during: silentStoreThenRestart, timeout: 5 * time.Second, grace: 3 * time.Second,
		code: 0, want: []string{`restarting the group`, `summary: steps`}},
	{name: "hostile/huge-frames-agent-rss", ckpt: true, args: steps(4), env: hold(0, 2), during: hugeFrameAttack,
		code: 0, want: []string{`on SIGUSR1`}},
	{name: "token/multi-node-without-token", fast: true, nodes: 2, nproc: 1, env: []string{"PPLAUNCH_TOKEN="}, args: steps(2),
		code: 2, want: []string{`--nnodes 2: a job on several nodes needs a secret token shared by its nodes, and PPLAUNCH_TOKEN is not set; generate one and export the same value on every node before pplaunch starts: export PPLAUNCH_TOKEN=\$\(openssl rand -hex 16\)`},
		notWant: []string{`\[rank`}},
	{name: "token/forged-failure-record-refused", nodes: 2, nproc: 1, ckpt: true, env: append(append([]string{}, token...), hold(0, 2)...),
		args: steps(4), during: forge, code: 0, want: []string{`on SIGUSR1`}, notWant: []string{`forged by the fault suite`}},
}
