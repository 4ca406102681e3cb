package slurmtest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/launch/netns"
)

// TestAgentsOnTwoHosts runs two pplaunch agents without Slurm, one on each of
// two simulated hosts (netns), as a user would on two machines:
//
//	h1$ pplaunch --nnodes 2 --node-rank 0 --rdzv-endpoint h1:29400 --rdzv-id ID --nproc 4 -- PROGRAM
//	h2$ pplaunch --nnodes 2 --node-rank 1 --rdzv-endpoint h1:29400 --rdzv-id ID --nproc 4 -- PROGRAM
//
// and checks that the ranks form one 8-rank world across the hosts.
func TestAgentsOnTwoHosts(t *testing.T) {
	n := netns.New(t, "h1", "h2")
	dir := t.TempDir()
	bin := buildPplaunch(t, moduleRoot(t), dir)
	reports := filepath.Join(dir, "reports")
	if err := os.Mkdir(reports, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const perNode = 4
	endpoint := n.Hosts[0].Name + ":29400"
	type agent struct {
		out  []byte
		err  error
		args []string
	}
	done := make(chan int, len(n.Hosts))
	agents := make([]agent, len(n.Hosts))
	for i, h := range n.Hosts {
		agents[i].args = []string{"--nnodes", strconv.Itoa(len(n.Hosts)), "--node-rank", strconv.Itoa(i),
			"--rdzv-endpoint", endpoint, "--rdzv-id", "netns-test", "--rdzv-timeout", "30s", "--nproc", strconv.Itoa(perNode),
			"--", "sh", "-c", ReportScript, "sh", reports}
		cmd := h.Command(ctx, bin, agents[i].args...)
		cmd.Env = append(CleanEnv(), "PPLAUNCH_TOKEN=netns-test-secret")
		go func() {
			agents[i].out, agents[i].err = cmd.CombinedOutput()
			done <- i
		}()
	}
	for range n.Hosts {
		i := <-done
		if agents[i].err != nil {
			t.Errorf("agent on %s: pplaunch %v: %v\n%s", n.Hosts[i].Name, agents[i].args, agents[i].err, agents[i].out)
		}
	}
	if t.Failed() {
		return
	}
	ranks := readReports(t, reports)
	if err := CheckWorld(ranks, []string{"h1", "h2"}, perNode, []string{"h1", n.Hosts[0].Addr.String()}); err != nil {
		t.Errorf("the ranks do not form the right world:\n%v\nagent on h1:\n%s\nagent on h2:\n%s", err, agents[0].out, agents[1].out)
	}
	t.Logf("ran on h1 (%s) and h2 (%s): pplaunch %s ...; %d ranks: %s",
		n.Hosts[0].Addr, n.Hosts[1].Addr, agents[1].args[:12], len(ranks), summary(ranks))
}
