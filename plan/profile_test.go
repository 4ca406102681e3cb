package plan

import (
	"strings"
	"testing"
)

func TestReadProfileRefuses(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{`{"version": 2}`, "version 2"},
		{`{"version": 1, "model": {"layers": 2}, "units": []}`, "0 units for a model of 2 layers"},
		{`{"version": 1, "model": {"layers": 1}, "microbatch_size": 1, "units": [{"unit": -1}, {"unit": 0, "forward_s": -1}, {"unit": 1}]}`, "unit 0 () has a time -1"},
		{`{"version": 1, "model": {"layers": 1}, "units": [{"unit": -1}, {"unit": 0}, {"unit": 1}]}`, "microbatch_size 0"},
		{`{`, "profile: unexpected EOF"},
	} {
		if _, err := ReadProfile(strings.NewReader(c.text)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ReadProfile(%s) = %v, want %q", c.text, err, c.want)
		}
	}
}
