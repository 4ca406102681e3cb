package launch

import (
	"fmt"
	"strconv"
	"strings"
)

// NodeCount is --nnodes: N nodes, or MIN:MAX (torchrun's form) for an
// elastic job whose world re-forms with any count in that range as nodes are
// lost or join. It is an encoding.TextUnmarshaler, which go-arg prefers to
// its own parsing.
type NodeCount struct{ Min, Max int }

// Nodes is a fixed count of n nodes.
func Nodes(n int) *NodeCount { return &NodeCount{Min: n, Max: n} }

// UnmarshalText parses "N" or "MIN:MAX".
func (n *NodeCount) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	lo, hi, elastic := strings.Cut(s, ":")
	min, err := strconv.Atoi(lo)
	if err != nil {
		return fmt.Errorf("%q: want N or MIN:MAX (e.g. 4, or 2:4)", s)
	}
	max := min
	if elastic {
		if max, err = strconv.Atoi(hi); err != nil {
			return fmt.Errorf("%q: want N or MIN:MAX (e.g. 4, or 2:4)", s)
		}
	}
	if elastic && (min < 1 || max < min) {
		return fmt.Errorf("%q: MIN:MAX needs 1 <= MIN <= MAX", s)
	}
	n.Min, n.Max = min, max
	return nil
}

// MarshalText writes what UnmarshalText reads.
func (n NodeCount) MarshalText() ([]byte, error) { return []byte(n.String()), nil }

func (n NodeCount) String() string {
	if n.Min == n.Max {
		return strconv.Itoa(n.Max)
	}
	return fmt.Sprintf("%d:%d", n.Min, n.Max)
}
