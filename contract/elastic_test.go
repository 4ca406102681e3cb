package contract

import (
	"strings"
	"testing"
)

func TestReadElastic(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want Elastic
		err  string
	}{
		{env: map[string]string{}, want: Elastic{}},
		{env: map[string]string{EnvElasticBase: "6"}, want: Elastic{Base: 6}},
		{env: map[string]string{EnvElasticBase: "4", EnvElasticPrev: "3:6", EnvElasticReason: "node 2 was lost"},
			want: Elastic{Base: 4, PrevNodes: 3, PrevSize: 6, Reason: "node 2 was lost"}},
		{env: map[string]string{EnvElasticPrev: "3:6"}, want: Elastic{}}, // not elastic: the last world is not read
		{env: map[string]string{EnvElasticBase: "x"}, err: EnvElasticBase},
		{env: map[string]string{EnvElasticBase: "0"}, err: "want the first world's size"},
		{env: map[string]string{EnvElasticBase: "4", EnvElasticPrev: "3"}, err: "want NODES:SIZE"},
		{env: map[string]string{EnvElasticBase: "4", EnvElasticPrev: "0:6"}, err: "want NODES:SIZE"},
	}
	for _, c := range cases {
		got, err := ReadElastic(func(k string) string { return c.env[k] })
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: error %v, want %q", c.env, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%v: %+v, %v; want %+v", c.env, got, err, c.want)
		}
	}
}

// What the agent sets (Set) a rank reads back (ReadElastic).
func TestElasticRoundTrip(t *testing.T) {
	for _, e := range []Elastic{{}, {Base: 4}, {Base: 4, PrevNodes: 3, PrevSize: 6, Reason: "node 2 was lost"}} {
		set := map[string]string{}
		e.Set(set)
		if e.Base == 0 && len(set) != 0 {
			t.Errorf("%+v: a job that is not elastic set %v", e, set)
		}
		got, err := ReadElastic(func(k string) string { return set[k] })
		if err != nil || got != e {
			t.Errorf("%+v: set %v, read back %+v, %v", e, set, got, err)
		}
	}
}
