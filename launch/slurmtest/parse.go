package slurmtest

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ParseOneLiner parses what `scontrol -o show job|node` prints for one record:
// Key=Value pairs separated by spaces. A value may itself hold spaces (a command
// line, a reason), so a word without '=' belongs to the value before it.
func ParseOneLiner(line string) map[string]string {
	kv := map[string]string{}
	last := ""
	for _, w := range strings.Fields(line) {
		k, v, ok := strings.Cut(w, "=")
		if ok && k != "" && !strings.ContainsAny(k, "/") {
			kv[k], last = v, k
			continue
		}
		if last != "" {
			kv[last] += " " + w
		}
	}
	return kv
}

// JobEnded reports whether a Slurm job state is final.
func JobEnded(state string) bool {
	switch state {
	case "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
		"BOOT_FAIL", "DEADLINE", "PREEMPTED", "REVOKED", "SPECIAL_EXIT":
		return true
	}
	return false
}

// ParseNodeStates parses `sinfo -h -N -o %N|%T` into node name -> state (idle,
// allocated, down*, ...). A malformed line is an error naming it.
func ParseNodeStates(out string) (map[string]string, error) {
	states := map[string]string{}
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		name, state, ok := strings.Cut(line, "|")
		if !ok || name == "" || state == "" {
			return nil, fmt.Errorf("sinfo line %d: %q: want NODE|STATE", i+1, line)
		}
		states[name] = state
	}
	return states, nil
}

// Rank is what one rank reported about itself: the host it ran on and its
// environment.
type Rank struct {
	Host string
	Env  map[string]string
}

// ReportHostKey is the first record of a rank report: the host name the rank saw.
const ReportHostKey = "REPORT_HOST"

// ReportScript is a shell command for `sh -c`: with the report directory as $1,
// it writes the rank's report there, named after host and pid so that two ranks
// claiming the same RANK cannot overwrite each other. The report is
// NUL-separated KEY=VALUE records (REPORT_HOST first, then env -0), so values
// with newlines survive.
const ReportScript = `{ printf '` + ReportHostKey + `=%s\0' "$(hostname)"; env -0; } > "$1/$(hostname).$$.rank"`

// ParseReport parses one report written by ReportScript.
func ParseReport(b []byte) (Rank, error) {
	r := Rank{Env: map[string]string{}}
	recs := bytes.Split(bytes.TrimSuffix(b, []byte{0}), []byte{0})
	for i, rec := range recs {
		k, v, ok := strings.Cut(string(rec), "=")
		if !ok || k == "" {
			return Rank{}, fmt.Errorf("record %d: %q is not KEY=VALUE", i+1, rec)
		}
		if i == 0 {
			if k != ReportHostKey {
				return Rank{}, fmt.Errorf("record 1: want %s=..., got %q", ReportHostKey, rec)
			}
			r.Host = v
			continue
		}
		r.Env[k] = v
	}
	if r.Host == "" {
		return Rank{}, errors.New("report names no host")
	}
	return r, nil
}

// CheckWorld checks that ranks form one torchrun-style world of len(nodes) nodes
// with perNode ranks each: global RANKs 0..N-1 each exactly once, WORLD_SIZE and
// LOCAL_WORLD_SIZE right everywhere, node i (NODE_RANK and GROUP_RANK i) running
// on nodes[i] with LOCAL_RANKs 0..perNode-1 and RANK = i*perNode + LOCAL_RANK,
// one MASTER_ADDR (one of masters: the first node's name or address) and one
// MASTER_PORT for all. It returns every problem found, not just the first.
func CheckWorld(ranks []Rank, nodes []string, perNode int, masters []string) error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	world := len(nodes) * perNode
	if len(ranks) != world {
		bad("%d ranks reported, want %d (%d nodes x %d)", len(ranks), world, len(nodes), perNode)
	}
	seen := map[int]string{}
	local := map[string]map[int]bool{}
	same := map[string]map[string]bool{} // variables that must agree across the world
	for _, r := range ranks {
		who := fmt.Sprintf("rank on %s (RANK=%q)", r.Host, r.Env["RANK"])
		num := func(key string) int {
			v, ok := r.Env[key]
			if !ok {
				bad("%s: %s not set", who, key)
				return -1
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				bad("%s: %s=%q is not a non-negative integer", who, key, v)
				return -1
			}
			return n
		}
		rank, lrank, node := num("RANK"), num("LOCAL_RANK"), num("NODE_RANK")
		if ws := num("WORLD_SIZE"); ws >= 0 && ws != world {
			bad("%s: WORLD_SIZE=%d, want %d", who, ws, world)
		}
		if lws := num("LOCAL_WORLD_SIZE"); lws >= 0 && lws != perNode {
			bad("%s: LOCAL_WORLD_SIZE=%d, want %d", who, lws, perNode)
		}
		if g := num("GROUP_RANK"); g >= 0 && g != node {
			bad("%s: GROUP_RANK=%d but NODE_RANK=%d", who, g, node)
		}
		if rank >= world {
			bad("%s: RANK=%d outside 0..%d", who, rank, world-1)
		} else if rank >= 0 {
			if other, dup := seen[rank]; dup {
				bad("RANK=%d reported twice: on %s and on %s", rank, other, r.Host)
			}
			seen[rank] = r.Host
		}
		if lrank >= perNode {
			bad("%s: LOCAL_RANK=%d outside 0..%d", who, lrank, perNode-1)
		}
		if node >= len(nodes) {
			bad("%s: NODE_RANK=%d outside 0..%d", who, node, len(nodes)-1)
		} else if node >= 0 {
			if r.Host != nodes[node] {
				bad("%s: NODE_RANK=%d is %s, but the rank ran on %s", who, node, nodes[node], r.Host)
			}
			if lrank >= 0 && rank >= 0 && rank != node*perNode+lrank {
				bad("%s: RANK=%d, want NODE_RANK*%d+LOCAL_RANK = %d", who, rank, perNode, node*perNode+lrank)
			}
		}
		if local[r.Host] == nil {
			local[r.Host] = map[int]bool{}
		}
		if lrank >= 0 && local[r.Host][lrank] {
			bad("LOCAL_RANK=%d twice on %s", lrank, r.Host)
		}
		local[r.Host][lrank] = true
		for _, k := range []string{"MASTER_ADDR", "MASTER_PORT"} {
			if r.Env[k] == "" {
				bad("%s: %s not set", who, k)
				continue
			}
			if same[k] == nil {
				same[k] = map[string]bool{}
			}
			same[k][r.Env[k]] = true
		}
	}
	for _, k := range []string{"MASTER_ADDR", "MASTER_PORT"} {
		if len(same[k]) > 1 {
			bad("ranks disagree on %s: %v", k, slices.Sorted(maps.Keys(same[k])))
		}
	}
	for addr := range same["MASTER_ADDR"] {
		if !slices.Contains(masters, addr) {
			bad("MASTER_ADDR=%s, want the first node (one of %v)", addr, masters)
		}
	}
	for _, n := range nodes {
		if got := len(local[n]); got != perNode {
			bad("%s ran %d ranks, want %d", n, got, perNode)
		}
	}
	return errors.Join(errs...)
}
