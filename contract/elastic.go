package contract

import (
	"fmt"
	"strconv"
	"strings"
)

// Elastic is what the agent of an elastic job (--nnodes MIN:MAX) tells its
// ranks (EnvElasticBase, EnvElasticPrev, EnvElasticReason): the first
// world's size, which the batch flags were given for (0: the job is not
// elastic), and in a world that re-formed with other nodes, the last
// world's nodes and ranks and why it changed (PrevSize 0: it did not).
type Elastic struct {
	Base                int
	PrevNodes, PrevSize int
	Reason              string
}

// Set writes e into set, the environment of a rank: nothing for a job that
// is not elastic, the last world only when there was one.
func (e Elastic) Set(set map[string]string) {
	if e.Base == 0 {
		return
	}
	set[EnvElasticBase] = strconv.Itoa(e.Base)
	if e.PrevSize > 0 {
		set[EnvElasticPrev] = fmt.Sprintf("%d:%d", e.PrevNodes, e.PrevSize)
		set[EnvElasticReason] = e.Reason
	}
}

// ReadElastic reads what Set wrote.
func ReadElastic(getenv func(string) string) (Elastic, error) {
	var e Elastic
	if v := getenv(EnvElasticBase); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return e, fmt.Errorf("%s=%q: want the first world's size", EnvElasticBase, v)
		}
		e.Base = n
	}
	if v := getenv(EnvElasticPrev); v != "" && e.Base > 0 {
		nodes, size, ok := strings.Cut(v, ":")
		var err1, err2 error
		e.PrevNodes, err1 = strconv.Atoi(nodes)
		e.PrevSize, err2 = strconv.Atoi(size)
		if !ok || err1 != nil || err2 != nil || e.PrevNodes < 1 || e.PrevSize < 1 {
			return e, fmt.Errorf("%s=%q: want NODES:SIZE", EnvElasticPrev, v)
		}
		e.Reason = getenv(EnvElasticReason)
	}
	return e, nil
}
