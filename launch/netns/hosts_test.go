package netns

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseHostsLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want hostsTag
		ok   bool
	}{
		{"10.77.3.1\tn1\t# pplaunch-netns slot=3", hostsTag{3, "n1"}, true},
		{"10.77.250.9 gpu-a1 # pplaunch-netns slot=250", hostsTag{250, "gpu-a1"}, true},
		{"127.0.0.1 localhost", hostsTag{}, false},
		{"10.77.3.1 n1 # pplaunch-netns slot=0", hostsTag{}, false},
		{"10.77.3.1 n1 # pplaunch-netns slot=251", hostsTag{}, false},
		{"10.77.3.1 n1 # pplaunch-netns slot=x", hostsTag{}, false},
		{"10.77.3.1 n1 n2 # pplaunch-netns slot=3", hostsTag{}, false},
		{"notanaddr n1 # pplaunch-netns slot=3", hostsTag{}, false},
		{"10.77.3.1 N1 # pplaunch-netns slot=3", hostsTag{}, false},
		{"# pplaunch-netns slot=3", hostsTag{}, false},
	} {
		got, ok := parseHostsLine(tc.line)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseHostsLine(%q) = %v, %v; want %v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

func TestDropLines(t *testing.T) {
	a := netip.MustParseAddr("10.77.3.1")
	b := netip.MustParseAddr("10.77.4.1")
	base := "127.0.0.1 localhost\n# comment\n10.0.0.5 db\n"
	content := base + hostsTag{3, "n1"}.line(a) + hostsTag{4, "h1"}.line(b)
	got := dropLines(content, func(t hostsTag) bool { return t.slot == 3 })
	if want := base + (hostsTag{4, "h1"}).line(b); got != want {
		t.Errorf("drop slot 3:\n%q\nwant\n%q", got, want)
	}
	got = dropLines(got, func(t hostsTag) bool { return t.name == "h1" })
	if got != base {
		t.Errorf("drop h1:\n%q\nwant\n%q", got, base)
	}
	// A file without a final newline keeps its last line as it was.
	if got := dropLines("127.0.0.1 localhost", func(hostsTag) bool { return true }); got != "127.0.0.1 localhost" {
		t.Errorf("no final newline: got %q", got)
	}
}

func TestForeignLine(t *testing.T) {
	content := "127.0.0.1 localhost vm\n10.0.0.5 db # n1 in a comment\n" + hostsTag{3, "n2"}.line(netip.MustParseAddr("10.77.3.2"))
	for _, tc := range []struct {
		name string
		ok   bool
	}{{"vm", true}, {"localhost", true}, {"n1", false}, {"n2", false}, {"db", true}} {
		if _, ok := foreignLine(content, tc.name); ok != tc.ok {
			t.Errorf("foreignLine(%q) = %v, want %v", tc.name, ok, tc.ok)
		}
	}
}

func TestCheckNames(t *testing.T) {
	for _, tc := range []struct {
		names []string
		ok    bool
	}{
		{[]string{"n1", "n2"}, true},
		{[]string{"gpu-a1"}, true},
		{nil, false},
		{[]string{"n1", "n1"}, false},
		{[]string{"1n"}, false},
		{[]string{"n_1"}, false},
		{[]string{"n1-"}, false},
		{[]string{"N1"}, false},
		{[]string{"a234567890123456789012345678901234567890123456789012345678901234"}, false},
	} {
		if err := checkNames(tc.names); (err == nil) != tc.ok {
			t.Errorf("checkNames(%q) = %v, want ok=%v", tc.names, err, tc.ok)
		}
	}
}

func FuzzParseHostsLine(f *testing.F) {
	f.Add("10.77.3.1\tn1\t# pplaunch-netns slot=3")
	f.Add("127.0.0.1 localhost")
	f.Add("::1 n1 # pplaunch-netns slot=7")
	f.Add("10.77.3.1 n1 # pplaunch-netns slot=-1")
	f.Fuzz(func(t *testing.T, line string) {
		tag, ok := parseHostsLine(line)
		if !ok {
			return
		}
		// What parses must be a line this package could have written, and write back the same.
		addr, err := netip.ParseAddr(strings.Fields(line)[0])
		if err != nil {
			t.Fatalf("parsed %q but its address does not parse: %v", line, err)
		}
		again, ok := parseHostsLine(tag.line(addr))
		if !ok || again != tag {
			t.Fatalf("round trip of %q: got %v, %v; want %v", line, again, ok, tag)
		}
		if got := dropLines(line+"\n", func(hostsTag) bool { return true }); got != "" {
			t.Fatalf("dropLines kept a parsed line: %q", got)
		}
	})
}
