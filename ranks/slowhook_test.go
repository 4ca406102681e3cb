package ranks

import (
	"strings"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/models"
)

func TestSlowHook(t *testing.T) {
	for _, c := range []struct {
		spec    string
		rank    int
		nilHook bool
		added   time.Duration // what a forward sublayer counts beyond its time
		err     string
	}{
		{spec: "", rank: 1, nilHook: true},
		{spec: "1:20", rank: 0, nilHook: true},
		{spec: "1:20:add", rank: 1, added: 10 * time.Millisecond},
		{spec: "0:3:add", rank: 0, added: 1500 * time.Microsecond},
		{spec: "1", rank: 1, err: "want RANK:MS or RANK:MS:add"},
		{spec: "1:20:burn", rank: 1, err: "want RANK:MS or RANK:MS:add"},
		{spec: "1:0", rank: 1, err: "want RANK:MS"},
		{spec: "x:5", rank: 1, err: "want RANK:MS"},
		{spec: "1:5:add:x", rank: 1, err: "want RANK:MS"},
	} {
		f, err := SlowHook(c.spec, c.rank)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), SlowEnv) {
				t.Errorf("%q: error %v, want one naming %s and saying %q", c.spec, err, SlowEnv, c.err)
			}
			continue
		case err != nil:
			t.Errorf("%q: %v", c.spec, err)
			continue
		case c.nilHook != (f == nil):
			t.Errorf("%q on rank %d: hook %v, want nil %v", c.spec, c.rank, f != nil, c.nilHook)
			continue
		case f == nil:
			continue
		}
		if got := f(0, models.PassF, 0); got != c.added {
			t.Errorf("%q: a forward sublayer counts %v more, want %v", c.spec, got, c.added)
		}
		if got := f(0, models.PassI, 0); got != 0 {
			t.Errorf("%q: a backward sublayer counts %v more, want 0", c.spec, got)
		}
	}
}
