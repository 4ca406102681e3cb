package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseCounts parses the value of flag, "1,2,4", into positive integers
// (bench rendezvous' --agents, bench scaling's --nodes and --nproc).
func ParseCounts(flag, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s %q: want positive integers separated by commas, e.g. 1,2,4", flag, s)
		}
		out = append(out, n)
	}
	return out, nil
}
