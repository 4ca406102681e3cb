package main

import (
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/contract"
)

func TestReadElastic(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want elasticEnv
		err  string
	}{
		{env: map[string]string{}, want: elasticEnv{}},
		{env: map[string]string{contract.EnvElasticBase: "6"}, want: elasticEnv{base: 6}},
		{env: map[string]string{contract.EnvElasticBase: "4", contract.EnvElasticPrev: "3:6", contract.EnvElasticReason: "node 2 was lost"},
			want: elasticEnv{base: 4, prevNodes: 3, prevSize: 6, reason: "node 2 was lost"}},
		{env: map[string]string{contract.EnvElasticBase: "x"}, err: contract.EnvElasticBase},
		{env: map[string]string{contract.EnvElasticBase: "4", contract.EnvElasticPrev: "3"}, err: "want NODES:SIZE"},
	}
	for _, c := range cases {
		got, err := readElastic(func(k string) string { return c.env[k] })
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
