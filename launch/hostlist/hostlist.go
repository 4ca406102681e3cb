package hostlist

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxHosts bounds the expansion so a hostile or mistyped list ("n[0-999999999]")
// is an error, not an exhausted memory.
const MaxHosts = 1 << 20

// Expand returns the host names of a Slurm host list, in order.
// Commas separate items outside brackets; an item may hold several bracket
// groups ("rack[1-2]-n[1-3]" gives the cross product); a range keeps the width
// of its zero-padded lower bound ("n[08-10]" gives n08 n09 n10).
func Expand(list string) ([]string, error) {
	items, err := splitTop(list)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, item := range items {
		if item == "" {
			return nil, fmt.Errorf("hostlist %q: empty host name", list)
		}
		names, err := expandItem(item, MaxHosts-len(out))
		if err != nil {
			return nil, fmt.Errorf("hostlist %q: %w", list, err)
		}
		out = append(out, names...)
	}
	return out, nil
}

// splitTop splits at commas that are not inside brackets.
func splitTop(list string) ([]string, error) {
	if list == "" {
		return nil, fmt.Errorf("hostlist: empty list")
	}
	var items []string
	depth, start := 0, 0
	for i := 0; i < len(list); i++ {
		switch list[i] {
		case '[':
			if depth > 0 {
				return nil, fmt.Errorf("hostlist %q: nested '[' at offset %d", list, i)
			}
			depth++
		case ']':
			if depth == 0 {
				return nil, fmt.Errorf("hostlist %q: unmatched ']' at offset %d", list, i)
			}
			depth--
		case ',':
			if depth == 0 {
				items = append(items, list[start:i])
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("hostlist %q: unclosed '['", list)
	}
	return append(items, list[start:]), nil
}

// expandItem expands one comma-free (outside brackets) item into at most limit names.
func expandItem(item string, limit int) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsAny(item, " \t\n") {
			return nil, fmt.Errorf("host %q contains white space", item)
		}
		return []string{item}, nil
	}
	end := strings.IndexByte(item[open:], ']') + open
	prefix, body, rest := item[:open], item[open+1:end], item[end+1:]
	suffixes, err := expandItem(rest, limit)
	if rest == "" {
		suffixes, err = []string{""}, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range strings.Split(body, ",") {
		nums, err := expandRange(r)
		if err != nil {
			return nil, fmt.Errorf("item %q: %w", item, err)
		}
		if len(out)+len(nums)*len(suffixes) > limit {
			return nil, fmt.Errorf("item %q: more than %d hosts", item, MaxHosts)
		}
		for _, n := range nums {
			for _, s := range suffixes {
				out = append(out, prefix+n+s)
			}
		}
	}
	return out, nil
}

// expandRange expands "7" or "01-04" to its numbers, zero-padded like the lower bound.
func expandRange(r string) ([]string, error) {
	lo, hi, isRange := strings.Cut(r, "-")
	if !isRange {
		hi = lo
	}
	a, err := parseNum(lo)
	if err != nil {
		return nil, fmt.Errorf("range %q: %w", r, err)
	}
	b, err := parseNum(hi)
	if err != nil {
		return nil, fmt.Errorf("range %q: %w", r, err)
	}
	if b < a {
		return nil, fmt.Errorf("range %q: %d is below %d", r, b, a)
	}
	if b-a >= MaxHosts {
		return nil, fmt.Errorf("range %q: more than %d hosts", r, MaxHosts)
	}
	width := len(lo)
	out := make([]string, 0, b-a+1)
	for n := a; n <= b; n++ {
		out = append(out, fmt.Sprintf("%0*d", width, n))
	}
	return out, nil
}

func parseNum(s string) (int, error) {
	if s == "" || len(s) > 9 {
		return 0, fmt.Errorf("%q is not a number of 1 to 9 digits", s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q is not a number", s)
		}
	}
	return strconv.Atoi(s)
}

// ExpandCounts expands Slurm's per-node task counts (SLURM_TASKS_PER_NODE,
// SLURM_STEP_TASKS_PER_NODE): "2(x3),1" gives [2 2 2 1].
func ExpandCounts(s string) ([]int, error) {
	if s == "" {
		return nil, fmt.Errorf("task counts: empty")
	}
	var out []int
	for _, item := range strings.Split(s, ",") {
		count, reps := item, "1"
		if i := strings.IndexByte(item, '('); i >= 0 {
			if !strings.HasPrefix(item[i:], "(x") || !strings.HasSuffix(item, ")") {
				return nil, fmt.Errorf("task counts %q: item %q is not N or N(xR)", s, item)
			}
			count, reps = item[:i], item[i+2:len(item)-1]
		}
		c, err := parseNum(count)
		if err != nil {
			return nil, fmt.Errorf("task counts %q: %w", s, err)
		}
		r, err := parseNum(reps)
		if err != nil {
			return nil, fmt.Errorf("task counts %q: %w", s, err)
		}
		if r == 0 || len(out)+r > MaxHosts {
			return nil, fmt.Errorf("task counts %q: repeat %d out of range 1..%d", s, r, MaxHosts)
		}
		for range r {
			out = append(out, c)
		}
	}
	return out, nil
}
