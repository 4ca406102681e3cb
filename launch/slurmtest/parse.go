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
	w := &worldCheck{nodes: nodes, perNode: perNode, world: len(nodes) * perNode,
		seen: map[int]string{}, local: map[string]map[int]bool{}, same: map[string]map[string]bool{}}
	if len(ranks) != w.world {
		w.bad("%d ranks reported, want %d (%d nodes x %d)", len(ranks), w.world, len(nodes), perNode)
	}
	for _, r := range ranks {
		w.rank(r)
	}
	w.agreed(masters)
	return errors.Join(w.errs...)
}

// worldCheck is CheckWorld's state: what the ranks seen so far claimed, and
// the problems found, in the order found.
type worldCheck struct {
	nodes   []string
	perNode int
	world   int
	seen    map[int]string             // RANK -> host that reported it
	local   map[string]map[int]bool    // host -> LOCAL_RANKs on it
	same    map[string]map[string]bool // variables that must agree across the world: values seen
	errs    []error
}

func (w *worldCheck) bad(format string, a ...any) { w.errs = append(w.errs, fmt.Errorf(format, a...)) }

// num is r's variable key as a non-negative integer, or -1 (and a problem)
// when it is missing or not one.
func (w *worldCheck) num(r Rank, who, key string) int {
	v, ok := r.Env[key]
	if !ok {
		w.bad("%s: %s not set", who, key)
		return -1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		w.bad("%s: %s=%q is not a non-negative integer", who, key, v)
		return -1
	}
	return n
}

// rank checks one rank's variables against the world and the ranks before it.
func (w *worldCheck) rank(r Rank) {
	who := fmt.Sprintf("rank on %s (RANK=%q)", r.Host, r.Env["RANK"])
	rank, lrank, node := w.num(r, who, "RANK"), w.num(r, who, "LOCAL_RANK"), w.num(r, who, "NODE_RANK")
	if ws := w.num(r, who, "WORLD_SIZE"); ws >= 0 && ws != w.world {
		w.bad("%s: WORLD_SIZE=%d, want %d", who, ws, w.world)
	}
	if lws := w.num(r, who, "LOCAL_WORLD_SIZE"); lws >= 0 && lws != w.perNode {
		w.bad("%s: LOCAL_WORLD_SIZE=%d, want %d", who, lws, w.perNode)
	}
	if g := w.num(r, who, "GROUP_RANK"); g >= 0 && g != node {
		w.bad("%s: GROUP_RANK=%d but NODE_RANK=%d", who, g, node)
	}
	w.placement(r.Host, who, rank, lrank, node)
	if w.local[r.Host] == nil {
		w.local[r.Host] = map[int]bool{}
	}
	if lrank >= 0 && w.local[r.Host][lrank] {
		w.bad("LOCAL_RANK=%d twice on %s", lrank, r.Host)
	}
	w.local[r.Host][lrank] = true
	for _, k := range []string{"MASTER_ADDR", "MASTER_PORT"} {
		if r.Env[k] == "" {
			w.bad("%s: %s not set", who, k)
			continue
		}
		if w.same[k] == nil {
			w.same[k] = map[string]bool{}
		}
		w.same[k][r.Env[k]] = true
	}
}

// placement checks that a rank's RANK, LOCAL_RANK and NODE_RANK (-1 where
// unreadable) are in range, unique, and put it on the host it ran on.
func (w *worldCheck) placement(host, who string, rank, lrank, node int) {
	if rank >= w.world {
		w.bad("%s: RANK=%d outside 0..%d", who, rank, w.world-1)
	} else if rank >= 0 {
		if other, dup := w.seen[rank]; dup {
			w.bad("RANK=%d reported twice: on %s and on %s", rank, other, host)
		}
		w.seen[rank] = host
	}
	if lrank >= w.perNode {
		w.bad("%s: LOCAL_RANK=%d outside 0..%d", who, lrank, w.perNode-1)
	}
	if node >= len(w.nodes) {
		w.bad("%s: NODE_RANK=%d outside 0..%d", who, node, len(w.nodes)-1)
	} else if node >= 0 {
		if host != w.nodes[node] {
			w.bad("%s: NODE_RANK=%d is %s, but the rank ran on %s", who, node, w.nodes[node], host)
		}
		if lrank >= 0 && rank >= 0 && rank != node*w.perNode+lrank {
			w.bad("%s: RANK=%d, want NODE_RANK*%d+LOCAL_RANK = %d", who, rank, w.perNode, node*w.perNode+lrank)
		}
	}
}

// agreed checks, once every rank is seen, that they agree on one master
// (one of masters) and that each node ran perNode ranks.
func (w *worldCheck) agreed(masters []string) {
	for _, k := range []string{"MASTER_ADDR", "MASTER_PORT"} {
		if len(w.same[k]) > 1 {
			w.bad("ranks disagree on %s: %v", k, slices.Sorted(maps.Keys(w.same[k])))
		}
	}
	for addr := range w.same["MASTER_ADDR"] {
		if !slices.Contains(masters, addr) {
			w.bad("MASTER_ADDR=%s, want the first node (one of %v)", addr, masters)
		}
	}
	for _, n := range w.nodes {
		if got := len(w.local[n]); got != w.perNode {
			w.bad("%s ran %d ranks, want %d", n, got, w.perNode)
		}
	}
}
