package launch

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/contract"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

func exitEv(rank, code int, sig syscall.Signal, at time.Time, stopped bool) event {
	return event{kind: evExit, rank: rank, local: rank % 4, pid: 100 + rank, code: code, sig: sig, at: at, stopped: stopped}
}

func repEv(rank int, class string, peer int, text string, at time.Time) event {
	return event{kind: evReport, rank: rank, local: rank % 4, pid: 100 + rank, at: at, rep: report{Class: class, Peer: peer, Text: text, At: at}}
}

func snapEv(rank int, action string, stopped bool) event {
	s := snapshot{Action: action, Since: ms(1), Pid: 100 + rank}
	if stopped {
		s.State = "stopped"
	}
	return event{kind: evSnapshot, rank: rank, snap: s}
}

// actString is the actions in order, without wake-ups and log lines.
func actString(acts []action) string {
	var out []string
	for _, a := range acts {
		switch a.kind {
		case actStop:
			out = append(out, "stop "+contract.SignalName(a.sig))
		case actKill:
			out = append(out, "kill")
		case actPublish:
			out = append(out, fmt.Sprintf("publish rank %d node %d", a.f.Rank, a.f.Node))
		case actForward:
			out = append(out, "forward "+contract.SignalName(a.sig))
		case actSuspend:
			out = append(out, "suspend")
		case actResume:
			out = append(out, "resume")
		case actHold:
			out = append(out, "hold")
		case actAck:
			out = append(out, fmt.Sprintf("ack node %d episode %d", a.node, a.episode))
		case actRelease:
			out = append(out, "release")
		}
	}
	return strings.Join(out, ", ")
}

func TestSupervisorDecisions(t *testing.T) {
	lostF := &failure{Node: 1, Rank: -1, Code: 1, How: "node 1 was lost", Final: true}
	cases := []struct {
		name        string
		nnodes      int
		nproc       int
		node        int
		events      []event
		acts        []string // per event, "" for none (nil: not checked)
		done        bool
		rank        int    // root cause's rank (-2: no failure)
		node0       int    // root cause's node
		how         string // in the root cause's How
		code        int
		final       bool
		notInHowFor string
	}{
		{name: "success", nnodes: 1, nproc: 2,
			events: []event{exitEv(0, 0, 0, ms(5), false), exitEv(1, 0, 0, ms(6), false)},
			acts:   []string{"", ""}, done: true, rank: -2},
		{name: "a crash is named and stops the group", nnodes: 1, nproc: 4,
			events: []event{exitEv(2, 3, 0, ms(5), false), exitEv(0, 0, syscall.SIGTERM, ms(6), true),
				exitEv(1, 0, syscall.SIGTERM, ms(6), true), exitEv(3, 0, syscall.SIGTERM, ms(7), true)},
			acts: []string{"stop SIGTERM", "", "", ""}, done: true, rank: 2, how: "exited with code 3", code: 3},
		{name: "own error before the rank that relayed it, which exited first", nnodes: 1, nproc: 2,
			// rank 0 fails writing --metrics and tells the others; rank 1
			// ends first with the relayed failure.
			events: []event{repEv(1, repRelayed, -1, "closing: rank 0: --metrics: no space", ms(12)),
				repEv(0, repError, -1, "--metrics: write /dev/full: no space left on device", ms(10)),
				exitEv(1, 1, 0, ms(13), false), exitEv(0, 1, 0, ms(15), true)},
			done: true, rank: 0, how: "--metrics: write /dev/full", code: 1},
		{name: "own error stamped after the peer that saw the link close", nnodes: 1, nproc: 2,
			events: []event{repEv(1, repPeerGone, 0, "rank 0 is gone: connection closed", ms(10)),
				exitEv(1, 1, 0, ms(11), false),
				repEv(0, repError, -1, "checkpoint: disk full", ms(40)), exitEv(0, 2, 0, ms(41), true)},
			done: true, rank: 0, how: "checkpoint: disk full", code: 1},
		{name: "a report read at its rank's exit carries the exit code", nnodes: 2, nproc: 1, node: 0,
			events: []event{{kind: evReport, rank: 0, pid: 100, at: ms(10), code: 3, rep: report{Class: repError, Peer: -1, Text: "bad data", At: ms(9)}},
				exitEv(0, 3, 0, ms(10), false)},
			acts: []string{"stop SIGTERM, publish rank 0 node 0", ""}, done: false, rank: 0, how: "bad data", code: 3},
		{name: "a peer gone with no failure of its own: the rank that saw it", nnodes: 1, nproc: 2,
			events: []event{repEv(1, repPeerGone, 0, "rank 0 is gone", ms(10)), exitEv(1, 1, 0, ms(11), false),
				exitEv(0, 0, syscall.SIGTERM, ms(12), true)},
			done: true, rank: 1, how: "rank 0 is gone", code: 1},
		{name: "a crash without report before the consequence it caused", nnodes: 1, nproc: 2,
			events: []event{repEv(1, repPeerGone, 0, "rank 0 is gone", ms(10)), exitEv(1, 1, 0, ms(11), false),
				exitEv(0, -1, syscall.SIGSEGV, ms(9), false)},
			done: true, rank: 0, how: "killed by SIGSEGV", code: 128 + int(syscall.SIGSEGV)},
		{name: "a killed rank heard of after the peer that saw it go and the stop", nnodes: 1, nproc: 4,
			// rank 2 is SIGKILLed; rank 3 reports its link closing and exits
			// before rank 2's keeper has reaped it; the group's stop finds
			// rank 2 dead already (endedByStop: not stopped).
			events: []event{repEv(3, repPeerGone, 2, "rank 2 is gone: connection closed", ms(10)), exitEv(3, 1, 0, ms(11), false),
				exitEv(0, 143, 0, ms(13), true), exitEv(1, 143, 0, ms(13), true), exitEv(2, -1, syscall.SIGKILL, ms(12), false)},
			done: true, rank: 2, how: "killed by SIGKILL", code: 137},
		{name: "a later independent failure is not the root cause", nnodes: 1, nproc: 2,
			events: []event{exitEv(1, 3, 0, ms(10), false), repEv(0, repError, -1, "late", ms(5000)), exitEv(0, 1, 0, ms(5001), true)},
			done:   true, rank: 1, how: "exited with code 3", code: 3},
		{name: "a stopped rank's report does not count", nnodes: 1, nproc: 2,
			events: []event{exitEv(1, 3, 0, ms(10), false), repEv(0, repStopped, -1, "context canceled", ms(11)), exitEv(0, 143, 0, ms(12), true)},
			done:   true, rank: 1, code: 3},
		{name: "a SIGSTOPped rank is the silent culprit", nnodes: 1, nproc: 3,
			events: []event{snapEv(1, "step 1 1F2", true), snapEv(2, "step 1 2RECV_F2", false),
				repEv(0, repTimeout, 1, "step 1: 0RECV_B2 with rank 1: timeout after 3s", ms(3000)),
				exitEv(0, 1, 0, ms(3001), false), exitEv(1, 0, syscall.SIGTERM, ms(3002), true), exitEv(2, 1, 0, ms(3003), true)},
			done: true, rank: 1, how: "was silent: its process was stopped", code: 1},
		{name: "a stopped rank that saw the rank that waited on it go is still the silent one", nnodes: 1, nproc: 2,
			// rank 1 is SIGSTOPped; rank 0 times out on it and exits; the
			// stop's SIGCONT lets rank 1 see rank 0's links closed before
			// it acts on the SIGTERM. Blame runs 0 -> 1 -> 0.
			events: []event{snapEv(1, "step 2 1B0", true), repEv(0, repTimeout, 1, "step 2: 0RECV_B0 with rank 1: timeout after 4s", ms(4000)),
				exitEv(0, 1, 0, ms(4001), false), repEv(1, repPeerGone, 0, "rank 0 is gone: connection closed", ms(4002)), exitEv(1, 1, 0, ms(4003), true)},
			done: true, rank: 1, how: "was silent: its process was stopped", code: 1},
		{name: "blame in a circle of consequences ends", nnodes: 1, nproc: 2,
			events: []event{repEv(0, repPeerGone, 1, "rank 1 is gone", ms(10)), repEv(1, repPeerGone, 0, "rank 0 is gone", ms(10)),
				exitEv(0, 1, 0, ms(11), false), exitEv(1, 1, 0, ms(11), false)},
			done: true, rank: 0, how: "rank 1 is gone", code: 1},
		{name: "a chain of timeouts ends at the silent rank", nnodes: 1, nproc: 3,
			events: []event{snapEv(0, "step 4 0F1", false),
				repEv(2, repTimeout, 1, "with rank 1: timeout", ms(3000)), repEv(1, repTimeout, 0, "with rank 0: timeout", ms(3001)),
				exitEv(2, 1, 0, ms(3002), false), exitEv(1, 1, 0, ms(3003), true), exitEv(0, 0, syscall.SIGTERM, ms(3004), true)},
			done: true, rank: 0, how: "its last action: step 4 0F1", code: 1},
		{name: "a timeout on a peer of another node names that peer", nnodes: 2, nproc: 1, node: 0,
			events: []event{repEv(0, repTimeout, 1, "with rank 1: timeout", ms(3000)), exitEv(0, 1, 0, ms(3001), false)},
			acts:   []string{"stop SIGTERM, publish rank 1 node -1", ""}, done: false, rank: 1, how: "(on another node)", node0: -1, code: 1},
		{name: "first-hand on several nodes: stop first, then publish", nnodes: 2, nproc: 2, node: 1,
			events: []event{exitEv(3, 7, 0, ms(10), false), {kind: evAgreed, f: &failure{Node: 1, Rank: 3, Code: 7, How: "exited with code 7"}},
				exitEv(2, 0, syscall.SIGTERM, ms(12), true)},
			acts: []string{"stop SIGTERM, publish rank 3 node 1", "", ""}, done: true, rank: 3, node0: 1, code: 7},
		{name: "a lost node, not this node's rank that saw its peer vanish", nnodes: 2, nproc: 1, node: 0,
			events: []event{repEv(0, repPeerGone, 1, "rank 1 is gone: connection closed", ms(10)), exitEv(0, 1, 0, ms(11), false),
				{kind: evNodeLost, node: 1, at: ms(3100)}, {kind: evAgreed, f: lostF}},
			acts: []string{"stop SIGTERM", "", "publish rank -1 node 1", ""}, done: true, rank: -1, node0: 1, how: "lost", code: 1, final: true},
		{name: "a consequence is published after the wait for news of the other node", nnodes: 2, nproc: 1, node: 0,
			events: []event{repEv(0, repPeerGone, 1, "rank 1 is gone", ms(10)), exitEv(0, 1, 0, ms(11), false),
				{kind: evTick, at: ms(10).Add(remoteWait - time.Millisecond)}, {kind: evTick, at: ms(10).Add(remoteWait)}},
			acts: []string{"stop SIGTERM", "", "kill", "publish rank 0 node 0"}, done: false, rank: 0, how: "rank 1 is gone", code: 1},
		{name: "a record naming this node's rank as silent gets what it was doing", nnodes: 2, nproc: 1, node: 1,
			events: []event{snapEv(1, "step 7 1F3", true),
				{kind: evRemote, at: ms(3000), f: &failure{Node: -1, Rank: 1, Code: 1, How: silentElsewhere + "; rank 0 timed out waiting for it: step 7: 0RECV_B2"}},
				exitEv(1, 0, syscall.SIGTERM, ms(3001), true)},
			acts: []string{"", "stop SIGTERM", ""}, done: true, rank: 1, node0: 1, code: 1,
			how: "its process was stopped (SIGSTOP or SIGTSTP); its last action: step 7 1F3, begun 1ms after start; rank 0 timed out waiting for it: step 7"},
		{name: "another node's failure stops this node", nnodes: 2, nproc: 2, node: 0,
			events: []event{{kind: evRemote, at: ms(5), f: &failure{Node: 1, Rank: 3, Code: 7, How: "exited with code 7"}},
				exitEv(0, 0, syscall.SIGTERM, ms(6), true), exitEv(1, 0, syscall.SIGTERM, ms(6), true)},
			acts: []string{"stop SIGTERM", "", ""}, done: true, rank: 3, node0: 1, code: 7},
		{name: "SIGTERM to the agent stops the job, final; a second one kills", nnodes: 1, nproc: 1,
			events: []event{{kind: evSignal, sig: syscall.SIGTERM, at: ms(5)}, {kind: evSignal, sig: syscall.SIGTERM, at: ms(6)},
				exitEv(0, 0, syscall.SIGKILL, ms(7), true)},
			acts: []string{"stop SIGTERM", "kill", ""}, done: true, rank: -1, how: "pplaunch received SIGTERM", code: 143, final: true},
		{name: "the grace period ends in SIGKILL", nnodes: 1, nproc: 2,
			events: []event{exitEv(0, 1, 0, ms(5), false), {kind: evTick, at: ms(5).Add(time.Second)}, {kind: evTick, at: ms(5).Add(2 * time.Second)},
				exitEv(1, 0, syscall.SIGKILL, ms(2006), true)},
			acts: []string{"stop SIGTERM", "", "kill", ""}, done: true, rank: 0, code: 1},
		{name: "job control on one node", nnodes: 1, nproc: 1,
			events: []event{{kind: evSignal, sig: syscall.SIGTSTP}, {kind: evSignal, sig: syscall.SIGCONT}, {kind: evSignal, sig: syscall.SIGUSR1}},
			acts:   []string{"suspend", "resume", "forward SIGUSR1"}, done: false, rank: -2},
		{name: "on several nodes Ctrl-Z suspends this node (the others hold theirs)", nnodes: 2, nproc: 1,
			events: []event{{kind: evSignal, sig: syscall.SIGTSTP}, {kind: evSignal, sig: syscall.SIGCONT}},
			acts:   []string{"suspend", "resume"}, done: false, rank: -2},
		{name: "another node suspended holds this node's ranks, acknowledged once per episode", nnodes: 3, nproc: 1,
			events: []event{{kind: evSuspensions, susp: map[int]int64{1: 1}}, {kind: evSuspensions, susp: map[int]int64{1: 1, 2: 3}},
				{kind: evSuspensions, susp: map[int]int64{2: 3}}, {kind: evSuspensions, susp: map[int]int64{}},
				{kind: evSuspensions, susp: map[int]int64{1: 2}}},
			acts: []string{"hold, ack node 1 episode 1", "ack node 2 episode 3", "", "release", "hold, ack node 1 episode 2"}, done: false, rank: -2},
		{name: "a group that is stopping is not held", nnodes: 2, nproc: 1,
			events: []event{exitEv(0, 1, 0, ms(5), false), {kind: evSuspensions, susp: map[int]int64{1: 1}}},
			acts:   []string{"stop SIGTERM, publish rank 0 node 0", ""}, done: false, rank: 0, code: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{NProc: tc.nproc, NNodes: tc.nnodes, NodeRank: tc.node, GracePeriod: 2 * time.Second}
			sv := newSupervisor(c, "host", World{FirstRank: tc.node * tc.nproc}, t0)
			for i, e := range tc.events {
				got := actString(sv.on(e))
				if tc.acts != nil && got != tc.acts[i] {
					t.Errorf("event %d (kind %d): actions %q, want %q", i, e.kind, got, tc.acts[i])
				}
			}
			if sv.done() != tc.done {
				t.Errorf("done %v, want %v", sv.done(), tc.done)
			}
			f := sv.outcome()
			if tc.rank == -2 {
				if f != nil {
					t.Fatalf("root cause %+v, want none", f)
				}
				return
			}
			if f == nil {
				t.Fatalf("no root cause, want rank %d", tc.rank)
			}
			if f.Rank != tc.rank || f.Node != tc.node0 || f.Code != tc.code || f.Final != tc.final || !strings.Contains(f.How, tc.how) {
				t.Errorf("root cause rank %d node %d code %d final %v %q;\nwant rank %d node %d code %d final %v, how containing %q",
					f.Rank, f.Node, f.Code, f.Final, f.How, tc.rank, tc.node0, tc.code, tc.final, tc.how)
			}
		})
	}
}

// A rank that died of a signal the agent did not send had ended before the
// agent's stop reached it (its keeper had not yet reaped it): its end is its
// own failure, not the stop's.
func TestEndedByStop(t *testing.T) {
	term := signalSet(0).with(syscall.SIGTERM)
	cases := []struct {
		name string
		sent signalSet
		sig  syscall.Signal
		want bool
	}{
		{"not signalled", 0, syscall.SIGKILL, false},
		{"not signalled, exited", 0, 0, false},
		{"exited after SIGTERM", term, 0, true},
		{"killed by the SIGTERM sent", term, syscall.SIGTERM, true},
		{"killed by SIGKILL the agent did not send", term, syscall.SIGKILL, false},
		{"crashed after SIGTERM", term, syscall.SIGSEGV, false},
		{"killed by the SIGKILL after the grace period", term.with(syscall.SIGKILL), syscall.SIGKILL, true},
		{"killed by SIGTERM, then sent SIGKILL too", term.with(syscall.SIGKILL), syscall.SIGTERM, true},
		{"killed by the SIGINT forwarded to stop", signalSet(0).with(syscall.SIGINT), syscall.SIGINT, true},
	}
	for _, tc := range cases {
		if got := endedByStop(tc.sent, tc.sig); got != tc.want {
			t.Errorf("%s: endedByStop(%b, %v) = %v, want %v", tc.name, tc.sent, tc.sig, got, tc.want)
		}
		r := &rank{exited: true, code: -1, sig: tc.sig, stopSent: tc.sent}
		if tc.sig == 0 {
			r.code = 143
		}
		if got := strings.Contains(r.how(), "stopped"); got != tc.want {
			t.Errorf("%s: summary says %q", tc.name, r.how())
		}
	}
}

func TestNextAttempt(t *testing.T) {
	cases := []struct {
		f            *failure
		restart, max int
		again        bool
		code         int
	}{
		{nil, 0, 3, false, 0},
		{&failure{Code: 5}, 0, 0, false, 5},
		{&failure{Code: 5}, 1, 2, true, 0},
		{&failure{Code: 5}, 2, 2, false, 5},
		{&failure{Code: 143, Final: true}, 0, 9, false, 143},
	}
	for _, tc := range cases {
		again, code := nextAttempt(tc.f, tc.restart, tc.max)
		if again != tc.again || code != tc.code {
			t.Errorf("nextAttempt(%+v, %d, %d) = %v, %d; want %v, %d", tc.f, tc.restart, tc.max, again, code, tc.again, tc.code)
		}
	}
}

func TestFlagMismatch(t *testing.T) {
	first := flagRecord{Node: 0, Flags: [][2]string{{"--nnodes", "2"}, {"--max-restarts", "0"}, {"--rdzv-id", "a"}}}
	if msg := flagMismatch(1, first.Flags, first); msg != "" {
		t.Errorf("equal flags refused: %s", msg)
	}
	msg := flagMismatch(1, [][2]string{{"--nnodes", "3"}, {"--max-restarts", "0"}, {"--rdzv-id", "a"}}, first)
	for _, want := range []string{"--nnodes differs", "node 1 has --nnodes 3", "node 0 has --nnodes 2"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
}
