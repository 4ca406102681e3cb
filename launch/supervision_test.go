package launch

import (
	"context"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Two ranks print 200 KiB lines at the same time: every console line is one
// rank's and carries its tag; the long lines arrive whole, in tagged parts.
func TestLongLinesStayTagged(t *testing.T) {
	const lineLen, lines = 200 << 10, 3
	script := `if [ "$RANK" = 0 ]; then c=a; else c=b; fi; i=0; while [ $i -lt 3 ]; do head -c 204800 /dev/zero | tr '\0' $c; echo; i=$((i+1)); done`
	_, out, errb, done := runAgent(testConfig(2), script)
	if code := wait(t, done, errb); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, errb)
	}
	re := regexp.MustCompile(`^\[rank ([01])\] ([ab]+)$`)
	chars := map[string]int{}
	for i, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		m := re.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("console line %d is not one rank's tagged text (%d bytes, starts %.40q)", i, len(l), l)
		}
		if want := map[string]byte{"0": 'a', "1": 'b'}[m[1]]; strings.Trim(m[2], string(want)) != "" {
			t.Fatalf("line %d tagged rank %s holds another rank's text", i, m[1])
		}
		if len(m[2]) > maxConsoleLine {
			t.Errorf("line %d has %d bytes, want at most %d", i, len(m[2]), maxConsoleLine)
		}
		chars[m[1]] += len(m[2])
	}
	for _, r := range []string{"0", "1"} {
		if chars[r] != lineLen*lines {
			t.Errorf("rank %s: %d characters on the console, want %d", r, chars[r], lineLen*lines)
		}
	}
}

// runNodesCtx runs one agent per node, each with its own Config, until they
// end or ctx does (which stops them).
func runNodesCtx(ctx context.Context, cs []Config, scripts []string) ([]int, []*watchBuf) {
	codes := make([]int, len(cs))
	errs := make([]*watchBuf, len(cs))
	var wg sync.WaitGroup
	for n := range cs {
		errs[n] = newWatchBuf()
		wg.Go(func() {
			codes[n] = Run(ctx, cs[n], shell(scripts[n], newWatchBuf(), errs[n]), make(chan os.Signal))
		})
	}
	wg.Wait()
	return codes, errs
}

// Agents given different --nnodes are refused at the rendezvous, which names
// the flag and both values, on both nodes.
func TestMismatchedNNodesRefused(t *testing.T) {
	port := freeTestPort(t)
	cs := []Config{testConfig(1), testConfig(1)}
	cs[0].NNodes, cs[0].NodeRank, cs[0].StorePort = 2, 0, port
	cs[1].NNodes, cs[1].NodeRank, cs[1].StorePort = 3, 1, port
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	codes, errs := runNodesCtx(ctx, cs, []string{"true", "true"})
	for n := range 2 {
		e := errs[n].String()
		if codes[n] == 0 || !strings.Contains(e, "--nnodes differs between agents") ||
			!strings.Contains(e, "has --nnodes 2") || !strings.Contains(e, "has --nnodes 3") {
			t.Errorf("node %d: exit %d, want a refusal naming --nnodes 2 and 3; stderr:\n%s", n, codes[n], e)
		}
	}
}

// A node whose ranks succeeded waits for the others at most --rdzv-timeout,
// then fails the job on every node.
func TestAwaitNodesHasADeadline(t *testing.T) {
	port := freeTestPort(t)
	cs := []Config{testConfig(1), testConfig(1)}
	for n := range cs {
		cs[n].NNodes, cs[n].NodeRank, cs[n].StorePort, cs[n].RdzvTimeout = 2, n, port, 5*time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	codes, errs := runNodesCtx(ctx, cs, []string{"true", "exec sleep 1000"})
	if ctx.Err() != nil {
		t.Fatalf("the agents ran until the test stopped them; node 0 stderr:\n%s", errs[0])
	}
	for n := range 2 {
		if codes[n] != 1 || !strings.Contains(errs[n].String(), "did not finish within --rdzv-timeout 5s") {
			t.Errorf("node %d: exit %d, want 1 naming --rdzv-timeout; stderr:\n%s", n, codes[n], errs[n])
		}
	}
}
