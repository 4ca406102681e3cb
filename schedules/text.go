package schedules

import (
	"fmt"
	"strings"
)

// The text form has one line per rank, in rank order. A line lists that
// rank's actions, separated by commas, each written <stage><kind><micro>:
//
//	# 2 ranks, 1F1B, 2 micro-batches, compute only
//	0F0, 0F1, 0B0, 0B1
//	1F0, 1B0, 1F1, 1B1
//
// Kinds are F, B, I, W, SEND_F, RECV_F, SEND_B, RECV_B. Spaces and tabs
// around actions are ignored, '#' starts a comment that runs to the end of
// the line, and blank or comment-only lines are skipped. The number of ranks
// is the number of action lines, the number of stages is the highest stage
// plus one, M is the highest micro-batch plus one, and stage s is placed on
// the first rank whose line mentions it.

// MaxIndex bounds the stage and micro-batch numbers the parser accepts, so
// that a corrupt file cannot ask for a huge allocation.
const MaxIndex = 1 << 16

// ParseError is a syntax error in the text form, with 1-based line and
// column.
type ParseError struct {
	Line, Col int
	Msg       string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("schedule text line %d col %d: %s", e.Line, e.Col, e.Msg)
}

// Parse reads a schedule in the text form. The result is not validated; see
// Validate, and Lower for compute-only text.
func Parse(text string) (*Schedule, error) {
	s := &Schedule{}
	maxStage, maxMicro := -1, -1
	for ln, line := range strings.Split(text, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		var acts []Action
		col := 0
		for field := range strings.SplitSeq(line, ",") {
			a, err := parseAction(field, ln+1, col+1)
			if err != nil {
				return nil, err
			}
			acts = append(acts, a)
			maxStage = max(maxStage, a.Stage)
			maxMicro = max(maxMicro, a.Micro)
			col += len(field) + 1
		}
		s.Ranks = append(s.Ranks, acts)
	}
	if len(s.Ranks) == 0 {
		return nil, &ParseError{Line: 1, Col: 1, Msg: "no ranks: the text has no action lines"}
	}
	s.P = len(s.Ranks)
	s.M = maxMicro + 1
	nst := maxStage + 1
	s.V = (nst + s.P - 1) / s.P
	s.Placement = make([]int, nst)
	for i := range s.Placement {
		s.Placement[i] = -1
	}
	for r, l := range s.Ranks {
		for _, a := range l {
			if s.Placement[a.Stage] < 0 {
				s.Placement[a.Stage] = r
			}
		}
	}
	return s, nil
}

// parseAction parses one comma-separated field; col is the 1-based column of
// the field's first byte.
func parseAction(field string, line, col int) (Action, error) {
	i := 0
	for i < len(field) && (field[i] == ' ' || field[i] == '\t') {
		i++
	}
	j := len(field)
	for j > i && (field[j-1] == ' ' || field[j-1] == '\t') {
		j--
	}
	if i == j {
		return Action{}, &ParseError{line, col + i, "empty action (two commas in a row, or a trailing comma)"}
	}
	body, base := field[i:j], col+i
	k := 0
	for k < len(body) && body[k] >= '0' && body[k] <= '9' {
		k++
	}
	if k == 0 {
		return Action{}, &ParseError{line, base, fmt.Sprintf("action %q must start with a stage number", body)}
	}
	stage, err := parseIndex(body[:k], "stage", line, base)
	if err != nil {
		return Action{}, err
	}
	ks := k
	for k < len(body) && (body[k] >= 'A' && body[k] <= 'Z' || body[k] == '_') {
		k++
	}
	kind, found := Kind(0), false
	for n, name := range kindNames {
		if body[ks:k] == name {
			kind, found = Kind(n), true
		}
	}
	if !found {
		return Action{}, &ParseError{line, base + ks, fmt.Sprintf("unknown kind %q in %q (want F, B, I, W, SEND_F, RECV_F, SEND_B or RECV_B)", body[ks:k], body)}
	}
	ms := k
	for k < len(body) && body[k] >= '0' && body[k] <= '9' {
		k++
	}
	if k == ms {
		return Action{}, &ParseError{line, base + ms, fmt.Sprintf("action %q needs a micro-batch number after the kind", body)}
	}
	if k != len(body) {
		return Action{}, &ParseError{line, base + k, fmt.Sprintf("unexpected %q after action %q", body[k:], body[:k])}
	}
	micro, err := parseIndex(body[ms:], "micro-batch", line, base+ms)
	if err != nil {
		return Action{}, err
	}
	return Action{kind, stage, micro}, nil
}

func parseIndex(digits, what string, line, col int) (int, error) {
	if len(digits) > 1 && digits[0] == '0' {
		return 0, &ParseError{line, col, fmt.Sprintf("%s number %q has a leading zero", what, digits)}
	}
	n := 0
	for _, c := range digits {
		n = n*10 + int(c-'0')
		if n >= MaxIndex {
			return 0, &ParseError{line, col, fmt.Sprintf("%s number %s is too large (limit %d)", what, digits, MaxIndex-1)}
		}
	}
	return n, nil
}

// Format writes s in the text form: a comment header, then one line per
// rank. Parse(Format(s)) gives back s for any schedule in which every rank
// has at least one action and every stage appears on its rank's line (every
// valid schedule).
func Format(s *Schedule) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# pplaunch schedule: %d ranks, %d stages, %d micro-batches\n", s.P, s.Stages(), s.M)
	var line []byte
	for _, l := range s.Ranks {
		line = line[:0]
		for i, a := range l {
			if i > 0 {
				line = append(line, ", "...)
			}
			line = a.appendText(line)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}
