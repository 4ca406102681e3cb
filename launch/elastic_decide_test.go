package launch

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNodeCount(t *testing.T) {
	cases := []struct {
		in       string
		min, max int
		err      string
	}{
		{in: "4", min: 4, max: 4},
		{in: "2:4", min: 2, max: 4},
		{in: "3:3", min: 3, max: 3},
		{in: " 1:2 ", min: 1, max: 2},
		{in: "4:2", err: "1 <= MIN <= MAX"},
		{in: "0:2", err: "1 <= MIN <= MAX"},
		{in: "2:", err: "want N or MIN:MAX"},
		{in: "two", err: "want N or MIN:MAX"},
	}
	for _, c := range cases {
		var n NodeCount
		err := n.UnmarshalText([]byte(c.in))
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: error %v, want one with %q", c.in, err, c.err)
		case c.err == "" && (err != nil || n.Min != c.min || n.Max != c.max):
			t.Errorf("%q: %+v, %v; want %d:%d", c.in, n, err, c.min, c.max)
		case c.err == "" && n.String() != strings.TrimSpace(strings.Replace(c.in, "3:3", "3", 1)):
			t.Errorf("%q: String %q", c.in, n.String())
		}
	}
}

func TestResolveElastic(t *testing.T) {
	f := baseFlags()
	f.NNodes, f.NodeRank, f.RdzvEndpoint = &NodeCount{Min: 2, Max: 3}, intp(7), "head:1"
	c, err := Resolve(f, func(k string) string { return map[string]string{"PPLAUNCH_TOKEN": testSecret}[k] })
	if err != nil || !c.Elastic() || c.MinNodes != 2 || c.NNodes != 3 || c.NodeRank != 7 {
		t.Fatalf("Resolve: %+v, %v; want an elastic 2:3 job, node 7", c, err)
	}
	f.NodeRank = intp(-1)
	if _, err := Resolve(f, func(k string) string { return map[string]string{"PPLAUNCH_TOKEN": testSecret}[k] }); err == nil || !strings.Contains(err.Error(), "named 0") {
		t.Errorf("node -1: %v", err)
	}
}

func TestPlanRound(t *testing.T) {
	j := func(n int) joinRequest { return joinRequest{Node: n, NProc: 2} }
	cases := []struct {
		name              string
		prev              []int
		gone              map[int]bool
		pending           []joinRequest
		min, max          int
		members, admitted string
		pendingLeft       string
		refused           string
		err               string
	}{
		{name: "first round", prev: []int{0}, pending: []joinRequest{j(2), j(1)}, min: 2, max: 3,
			members: "[0 1 2]", admitted: "[2 1]", pendingLeft: "[]"},
		{name: "a lost node leaves", prev: []int{0, 1, 2}, gone: map[int]bool{2: true}, min: 2, max: 3,
			members: "[0 1]", admitted: "[]", pendingLeft: "[]"},
		{name: "a lost node's place goes to the first waiting", prev: []int{0, 1, 2}, gone: map[int]bool{1: true},
			pending: []joinRequest{j(5), j(4)}, min: 2, max: 3, members: "[0 2 5]", admitted: "[5]", pendingLeft: "[4]"},
		{name: "a full world keeps the joiners waiting", prev: []int{0, 1, 2}, pending: []joinRequest{j(3)}, min: 2, max: 3,
			members: "[0 1 2]", admitted: "[]", pendingLeft: "[3]"},
		{name: "a name already in the job is refused", prev: []int{0, 1}, pending: []joinRequest{j(1), j(3)}, min: 2, max: 3,
			members: "[0 1 3]", admitted: "[3]", pendingLeft: "[]", refused: "1"},
		{name: "a lost node does not come back under its name", prev: []int{0, 1}, gone: map[int]bool{2: true}, pending: []joinRequest{j(2)},
			min: 2, max: 3, members: "[0 1]", admitted: "[]", pendingLeft: "[]", refused: "2"},
		{name: "below MIN", prev: []int{0, 1, 2}, gone: map[int]bool{1: true, 2: true}, min: 2, max: 3,
			err: "1 node left (0) (nodes 1, 2 were lost), fewer than --nnodes 2:3 allows: stopping"},
	}
	nodes := func(js []joinRequest) string {
		var out []int
		for _, j := range js {
			out = append(out, j.Node)
		}
		return fmt.Sprint(out)
	}
	for _, c := range cases {
		p, err := planRound(c.prev, c.gone, c.pending, c.min, c.max)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		var refused []string
		for n, why := range p.Refused {
			refused = append(refused, fmt.Sprint(n))
			if !strings.Contains(why, "--node-rank") {
				t.Errorf("%s: refusal %q does not say what to change", c.name, why)
			}
		}
		if err != nil || fmt.Sprint(p.Members) != c.members || nodes(p.Admitted) != c.admitted || nodes(p.Pending) != c.pendingLeft || strings.Join(refused, ",") != c.refused {
			t.Errorf("%s: members %v admitted %s pending %s refused %v (%v);\nwant %s %s %s %q", c.name, p.Members, nodes(p.Admitted), nodes(p.Pending), refused, err,
				c.members, c.admitted, c.pendingLeft, c.refused)
		}
	}
}

func TestFirstRoundForms(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cases := []struct {
		asked int
		after time.Duration
		want  bool
	}{
		{asked: 3, want: true},         // MAX: at once
		{asked: 2, after: time.Second}, // MIN, but the last call is open
		{asked: 2, after: lastCall, want: true},
		{asked: 1, after: time.Hour}, // below MIN: never
	}
	for _, c := range cases {
		if got := firstRoundForms(c.asked, 2, 3, t0, t0.Add(c.after)); got != c.want {
			t.Errorf("%d asked, %v after the last: forms %v, want %v", c.asked, c.after, got, c.want)
		}
	}
}

func TestGrowNow(t *testing.T) {
	cases := []struct {
		members, restart int
		want             bool
	}{
		{members: 2, restart: 0, want: true},
		{members: 3, restart: 0}, // full
		{members: 2, restart: 3}, // no restart left
		{members: 1, restart: 2, want: true},
	}
	for _, c := range cases {
		if got := growNow(c.members, 3, c.restart, 3); got != c.want {
			t.Errorf("%d members, restart %d of 3: grow %v, want %v", c.members, c.restart, got, c.want)
		}
	}
}

func TestRelayoutReason(t *testing.T) {
	cases := []struct {
		prev, now []int
		want      string
	}{
		{[]int{0, 1, 2}, []int{0, 1}, "node 2 was lost"},
		{[]int{0, 1}, []int{0, 1, 3}, "node 3 joined"},
		{[]int{0, 1, 2, 3}, []int{0, 4}, "nodes 1, 2, 3 were lost, node 4 joined"},
		{[]int{0, 1}, []int{0, 1}, ""},
	}
	for _, c := range cases {
		if got := relayoutReason(c.prev, c.now); got != c.want {
			t.Errorf("%v → %v: %q, want %q", c.prev, c.now, got, c.want)
		}
	}
}

// An elastic job's supervisor: a lost member is not final (the world
// re-forms), a lost node that is not a member is no news to the ranks (but
// is gone: the next round refuses its join request), a join (on node 0,
// with room) drains the ranks at a step boundary, and a failure during a
// drain stops them at once.
func TestElasticSupervisor(t *testing.T) {
	join := &failure{Node: 3, Rank: -1, How: "node 3 asks to join", Join: true}
	cases := []struct {
		name     string
		node     int
		growable bool
		events   []event
		acts     []string
		done     bool
		lost     bool // the outcome is a lost node, not final
		joined   bool // the outcome is the join
		gone     []int
	}{
		{name: "a lost member re-forms the world", events: []event{{kind: evNodeLost, node: 2}, {kind: evAgreed, f: &failure{Node: 2, Rank: -1, Code: 1, Lost: true}}},
			acts: []string{"stop SIGTERM, publish rank -1 node 2", ""}, lost: true, gone: []int{2}},
		{name: "a lost node outside the world is no news", events: []event{{kind: evNodeLost, node: 5}, {kind: evNodeLost, node: 5}},
			acts: []string{"", ""}, gone: []int{5}},
		{name: "a join with room drains the ranks", growable: true,
			events: []event{{kind: evJoin, node: 3}, {kind: evAgreed, f: join}, exitEv(0, 0, 0, ms(50), true), exitEv(1, 0, 0, ms(60), true)},
			acts:   []string{"publish rank -1 node 3", "stop SIGUSR1", "", ""}, done: true, joined: true},
		{name: "a join without room waits", events: []event{{kind: evJoin, node: 3}}, acts: []string{""}},
		{name: "another node's join record drains this node's ranks", node: 1,
			events: []event{{kind: evRemote, f: join}}, acts: []string{"stop SIGUSR1"}, joined: true},
		{name: "a member lost during a drain stops the ranks at once", growable: true,
			events: []event{{kind: evJoin, node: 3}, {kind: evAgreed, f: join}, {kind: evNodeLost, node: 1}},
			acts:   []string{"publish rank -1 node 3", "stop SIGUSR1", "stop SIGTERM"}, joined: true, gone: []int{1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{NProc: 2, NNodes: 3, MinNodes: 2, NodeRank: tc.node, GracePeriod: 2 * time.Second}
			sv := newSupervisor(c, "host", World{FirstRank: tc.node * 2, Members: []int{0, 1, 2}}, t0)
			sv.growable = tc.growable
			for i, e := range tc.events {
				if got := actString(sv.on(e)); got != tc.acts[i] {
					t.Errorf("event %d (kind %d): actions %q, want %q", i, e.kind, got, tc.acts[i])
				}
			}
			if sv.done() != tc.done {
				t.Errorf("done %v, want %v", sv.done(), tc.done)
			}
			if got := slices.Sorted(maps.Keys(sv.lostNodes)); fmt.Sprint(got) != fmt.Sprint(tc.gone) {
				t.Errorf("nodes taken for lost %v, want %v", got, tc.gone)
			}
			f := sv.outcome()
			switch {
			case tc.lost && (f == nil || !f.Lost || f.Final):
				t.Errorf("outcome %+v, want a lost node, not final", f)
			case tc.joined && (f == nil || !f.Join || f.Code != 0):
				t.Errorf("outcome %+v, want the join", f)
			case !tc.lost && !tc.joined && f != nil:
				t.Errorf("outcome %+v, want none", f)
			}
			again, code := nextAttempt(f, 0, 3)
			if (tc.lost || tc.joined) && (!again || code != 0) {
				t.Errorf("next attempt %v (code %d), want the world to re-form", again, code)
			}
		})
	}
}

// An elastic job's ranks get their node's place in the world (not its name)
// and the elastic variables; a fixed job's get none, even when the agent's
// own environment has them.
func TestRankEnvElastic(t *testing.T) {
	get := func(env []string) map[string]string {
		m := map[string]string{}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
		return m
	}
	inherited := []string{"PPLAUNCH_ELASTIC_BASE_WORLD_SIZE=9", "PPLAUNCH_ELASTIC_PREV_WORLD=1:1", "PPLAUNCH_ELASTIC_REASON=old"}
	el := Config{NProc: 2, NNodes: 3, MinNodes: 2, NodeRank: 7, Cores: 2}
	w := World{Size: 4, FirstRank: 2, NNodes: 2, GroupRank: 1, Members: []int{0, 7}, Base: 6, PrevNodes: 3, PrevSize: 6, Reason: "node 2 was lost"}
	env := get(rankEnv(inherited, el, w, 0, 1))
	for k, want := range map[string]string{"GROUP_RANK": "1", "NODE_RANK": "1", "GROUP_WORLD_SIZE": "2", "RANK": "2",
		"PPLAUNCH_ELASTIC_BASE_WORLD_SIZE": "6", "PPLAUNCH_ELASTIC_PREV_WORLD": "3:6", "PPLAUNCH_ELASTIC_REASON": "node 2 was lost"} {
		if env[k] != want {
			t.Errorf("elastic: %s=%q, want %q", k, env[k], want)
		}
	}
	w.PrevSize = 0 // the same nodes as the last round
	env = get(rankEnv(inherited, el, w, 0, 2))
	if _, ok := env["PPLAUNCH_ELASTIC_PREV_WORLD"]; ok || env["PPLAUNCH_ELASTIC_BASE_WORLD_SIZE"] != "6" {
		t.Errorf("elastic, unchanged world: %v", env)
	}
	fixed := Config{NProc: 2, NNodes: 2, NodeRank: 1, Cores: 2}
	env = get(rankEnv(inherited, fixed, World{Size: 4, FirstRank: 2, NNodes: 2}, 0, 0))
	for _, k := range []string{"PPLAUNCH_ELASTIC_BASE_WORLD_SIZE", "PPLAUNCH_ELASTIC_PREV_WORLD", "PPLAUNCH_ELASTIC_REASON"} {
		if _, ok := env[k]; ok {
			t.Errorf("a fixed job's rank has %s=%s", k, env[k])
		}
	}
	if env["GROUP_RANK"] != "1" {
		t.Errorf("fixed: GROUP_RANK=%q, want the node rank 1", env["GROUP_RANK"])
	}
}
