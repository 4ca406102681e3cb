package keeper

import (
	"errors"
	"time"
)

// Env marks the keeper mode: the agent sets Env=1 in the keeper's
// environment (never in a rank's).
const Env = "PPLAUNCH_KEEPER"

// CgroupEnv set to "off" keeps the keeper from making cgroups (it then
// relies on process groups and the ranks' environment alone).
const CgroupEnv = "PPLAUNCH_CGROUP"

// Start asks the keeper to start one rank: the program's path, its argv
// (argv[0] first) and its whole environment. The message carries the rank's
// stdin, stdout and stderr as SCM_RIGHTS.
type Start struct {
	Local int
	Path  string
	Argv  []string
	Env   []string
}

// Encode is the message: NUL-separated fields, the argv and environment
// each preceded by their count.
func (s Start) Encode() []byte {
	f := []string{"start", itoa(s.Local), s.Path, itoa(len(s.Argv))}
	f = append(f, s.Argv...)
	f = append(f, itoa(len(s.Env)))
	f = append(f, s.Env...)
	return []byte(join(f, "\x00"))
}

// DecodeStart reads a Start message.
func DecodeStart(b []byte) (Start, error) {
	f := split(string(b), 0)
	if len(f) < 5 || f[0] != "start" {
		return Start{}, errors.New("keeper: not a start message")
	}
	var s Start
	var err error
	if s.Local, err = atoi(f[1]); err != nil || s.Local < 0 {
		return Start{}, errors.New("keeper: start message: local rank " + quote(f[1]))
	}
	s.Path = f[2]
	rest := f[3:]
	if s.Argv, rest, err = counted(rest); err != nil {
		return Start{}, errors.New("keeper: start message: argv: " + err.Error())
	}
	if s.Env, rest, err = counted(rest); err != nil {
		return Start{}, errors.New("keeper: start message: environment: " + err.Error())
	}
	if len(rest) != 0 || len(s.Argv) == 0 {
		return Start{}, errors.New("keeper: start message: " + itoa(len(rest)) + " fields left over, argv of " + itoa(len(s.Argv)))
	}
	return s, nil
}

// counted splits off a count and that many fields.
func counted(f []string) (list, rest []string, err error) {
	if len(f) == 0 {
		return nil, nil, errors.New("no count")
	}
	n, err := atoi(f[0])
	if err != nil || n < 0 || n > len(f)-1 {
		return nil, nil, errors.New("count " + quote(f[0]) + " of " + itoa(len(f)-1) + " fields")
	}
	return f[1 : 1+n], f[1+n:], nil
}

// quote is s in double quotes, cut to 40 bytes, for an error.
func quote(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return `"` + oneLine(s) + `"`
}

// Kind is what an Event reports.
type Kind string

const (
	Ready   Kind = "ready" // the keeper runs; Text: its cgroup directory, "" for none
	Started Kind = "pid"   // rank Local runs as Pid, since At
	Failed  Kind = "error" // rank Local could not start (-1: the keeper failed): Text says why
	Exited  Kind = "exit"  // rank Local ended (Code, or Sig), at At, after CPU
)

// Event is one message from the keeper to the agent.
type Event struct {
	Kind  Kind
	Local int
	Pid   int
	Code  int // exit code; -1 when a signal ended it
	Sig   int // the signal that ended it, or 0
	At    time.Time
	CPU   time.Duration // user + system, the rank and its reaped children
	Text  string
}

// Encode is the event as one line of space-separated fields (Text last).
func (e Event) Encode() []byte {
	var f []string
	switch e.Kind {
	case Ready:
		f = []string{"ready", e.Text}
	case Started:
		f = []string{"pid", itoa(e.Local), itoa(e.Pid), itoa(int(e.At.UnixNano()))}
	case Failed:
		f = []string{"error", itoa(e.Local), oneLine(e.Text)}
	default:
		f = []string{"exit", itoa(e.Local), itoa(e.Code), itoa(e.Sig), itoa(int(e.At.UnixNano())), itoa(int(e.CPU))}
	}
	return []byte(join(f, " "))
}

// ParseEvent reads an event.
func ParseEvent(b []byte) (Event, error) {
	kind, rest, _ := cut(string(b), " ")
	e := Event{Kind: Kind(kind)}
	bad := errors.New("keeper said " + quote(string(b)))
	var n []int
	switch e.Kind {
	case Ready:
		e.Text = rest
		return e, nil
	case Failed:
		local, text, _ := cut(rest, " ")
		var err error
		if e.Local, err = atoi(local); err != nil {
			return Event{}, bad
		}
		e.Text = text
		return e, nil
	case Started:
		if n = ints(rest, 3); n == nil {
			return Event{}, bad
		}
		e.Local, e.Pid, e.At = n[0], n[1], time.Unix(0, int64(n[2]))
		return e, nil
	case Exited:
		if n = ints(rest, 5); n == nil {
			return Event{}, bad
		}
		e.Local, e.Code, e.Sig, e.At, e.CPU = n[0], n[1], n[2], time.Unix(0, int64(n[3])), time.Duration(n[4])
		return e, nil
	}
	return Event{}, bad
}

// ints reads exactly n space-separated integers (nil if s is not that).
func ints(s string, n int) []int {
	f := split(s, ' ')
	if len(f) != n {
		return nil
	}
	out := make([]int, n)
	for i, x := range f {
		v, err := atoi(x)
		if err != nil {
			return nil
		}
		out[i] = v
	}
	return out
}
