package keeper

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestStartRoundTrip(t *testing.T) {
	for _, s := range []Start{
		{Local: 0, Path: "/bin/true", Argv: []string{"true"}},
		{Local: 63, Path: "/usr/bin/env", Argv: []string{"env", "", "a b", "x=y"}, Env: []string{"RANK=63", "EMPTY=", "SPACES=a b\tc"}},
	} {
		got, err := DecodeStart(s.Encode())
		if err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		if got.Env == nil {
			got.Env = nil
		}
		if got.Local != s.Local || got.Path != s.Path || !reflect.DeepEqual(got.Argv, s.Argv) || len(got.Env) != len(s.Env) ||
			(len(s.Env) > 0 && !reflect.DeepEqual(got.Env, s.Env)) {
			t.Errorf("round trip of %+v gave %+v", s, got)
		}
	}
}

func TestDecodeStartRefuses(t *testing.T) {
	for _, tc := range []struct{ msg, want string }{
		{"", "not a start message"},
		{"stop\x000\x00/bin/true\x001\x00true\x000", "not a start message"},
		{"start\x00x\x00/bin/true\x001\x00true\x000", `local rank "x"`},
		{"start\x00-1\x00/bin/true\x001\x00true\x000", `local rank "-1"`},
		{"start\x000\x00/bin/true\x005\x00true\x000", `argv: count "5" of 2 fields`},
		{"start\x000\x00/bin/true\x001\x00true\x003\x00A=1", `environment: count "3" of 1 fields`},
		{"start\x000\x00/bin/true\x000\x000", "argv of 0"},
		{"start\x000\x00/bin/true\x001\x00true\x000\x00extra", "1 fields left over"},
	} {
		_, err := DecodeStart([]byte(tc.msg))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DecodeStart(%q) = %v, want an error with %q", tc.msg, err, tc.want)
		}
	}
}

func TestEventRoundTrip(t *testing.T) {
	at := time.Unix(1764600000, 123456789)
	for _, e := range []Event{
		{Kind: Ready, Text: "/sys/fs/cgroup/pplaunch-12"},
		{Kind: Ready},
		{Kind: Started, Local: 3, Pid: 4242, At: at},
		{Kind: Failed, Local: 1, Text: "fork/exec /no/such: no such file or directory"},
		{Kind: Failed, Local: -1, Text: "PR_SET_CHILD_SUBREAPER: operation not permitted"},
		{Kind: Exited, Local: 2, Code: 3, At: at, CPU: 1500 * time.Millisecond},
		{Kind: Exited, Local: 0, Code: -1, Sig: 9, At: at},
	} {
		got, err := ParseEvent(e.Encode())
		if err != nil {
			t.Fatalf("%+v: %v", e, err)
		}
		if !got.At.Equal(e.At) || got.Kind != e.Kind || got.Local != e.Local || got.Pid != e.Pid || got.Code != e.Code ||
			got.Sig != e.Sig || got.CPU != e.CPU || got.Text != e.Text {
			t.Errorf("round trip of %+v gave %+v", e, got)
		}
	}
	// A failure's text stays one message: its newlines become spaces.
	if got, _ := ParseEvent(Event{Kind: Failed, Text: "a\nb"}.Encode()); got.Text != "a b" {
		t.Errorf("multi-line text came back as %q", got.Text)
	}
}

func TestParseEventRefuses(t *testing.T) {
	for _, msg := range []string{"", "pid 1", "pid 1 2 x", "exit 1 2 3 4", "exit 1 2 3 4 5 6", "error x text", "hello 1"} {
		if e, err := ParseEvent([]byte(msg)); err == nil || !strings.Contains(err.Error(), "keeper said") {
			t.Errorf("ParseEvent(%q) = %+v, %v; want an error naming what the keeper said", msg, e, err)
		}
	}
}

func TestText(t *testing.T) {
	for _, n := range []int{0, 7, -7, 10, 1 << 40, -1 << 62} {
		s := itoa(n)
		if m, err := atoi(s); err != nil || m != n {
			t.Errorf("atoi(itoa(%d) = %q) = %d, %v", n, s, m, err)
		}
	}
	for _, s := range []string{"", "-", "1x", " 1", "12345678901234567890"} {
		if _, err := atoi(s); err == nil {
			t.Errorf("atoi(%q) took it", s)
		}
	}
	if got := split("a\x00\x00b", 0); !reflect.DeepEqual(got, []string{"a", "", "b"}) {
		t.Errorf("split = %q", got)
	}
	if got := fields(" a\tbb \n c "); !reflect.DeepEqual(got, []string{"a", "bb", "c"}) {
		t.Errorf("fields = %q", got)
	}
	if b, a, ok := cut("x - y - z", " - "); b != "x" || a != "y - z" || !ok {
		t.Errorf("cut = %q %q %v", b, a, ok)
	}
	if _, _, ok := cut("xy", "xyz"); ok {
		t.Error("cut found a separator longer than the text")
	}
}
