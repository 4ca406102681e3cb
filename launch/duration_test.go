package launch

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"2", 2 * time.Second, ""},
		{"30", 30 * time.Second, ""},
		{"0.5", 500 * time.Millisecond, ""},
		{" 15 ", 15 * time.Second, ""},
		{"0", 0, ""},
		{"-1", -time.Second, ""}, // the flag's own check refuses it, naming the flag
		{"2s", 2 * time.Second, ""},
		{"5m", 5 * time.Minute, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"250ms", 250 * time.Millisecond, ""},
		{"2x", 0, `duration "2x": want seconds (30, 0.5) or a Go duration (30s, 5m, 1h30m)`},
		{"", 0, `duration "": want seconds`},
		{"0x10", 0, `duration "0x10": want seconds`},
		{"inf", 0, `duration "inf": out of range`},
		{"NaN", 0, `duration "NaN": out of range`},
		{"1e12", 0, `duration "1e12": out of range`},
	} {
		var d Duration
		err := d.UnmarshalText([]byte(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, %v; want error %q", c.in, d, err, c.err)
			}
			continue
		}
		if err != nil || d.D() != c.want {
			t.Errorf("%q: %v, %v; want %v", c.in, d, err, c.want)
		}
	}
}

// A duration writes Go's form, which reads back, in text and in JSON.
func TestDurationRoundTrip(t *testing.T) {
	for _, d := range []Duration{0, Duration(1500 * time.Millisecond), Duration(5 * time.Minute)} {
		b, err := json.Marshal(struct{ D Duration }{d})
		if err != nil {
			t.Fatal(err)
		}
		var back struct{ D Duration }
		if err := json.Unmarshal(b, &back); err != nil || back.D != d {
			t.Fatalf("%v: %s read back as %v, %v", d, b, back.D, err)
		}
	}
	for in, want := range map[string]time.Duration{`{"D": 30}`: 30 * time.Second, `{"D": 0.25}`: 250 * time.Millisecond, `{"D": "5m"}`: 5 * time.Minute} {
		var v struct{ D Duration }
		if err := json.Unmarshal([]byte(in), &v); err != nil || v.D.D() != want {
			t.Errorf("%s: %v, %v; want %v", in, v.D, err, want)
		}
	}
	for _, in := range []string{`{"D": true}`, `{"D": "5q"}`, `{"D": [1]}`} {
		var v struct{ D Duration }
		if err := json.Unmarshal([]byte(in), &v); err == nil || !strings.Contains(err.Error(), "duration") {
			t.Errorf("%s: %v, want an error naming the duration", in, err)
		}
	}
	if s := Duration(90 * time.Second).String(); s != "1m30s" {
		t.Fatalf("String() = %q", s)
	}
}
