package hostlist

import (
	"reflect"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"n1", []string{"n1"}},
		{"n[1-2]", []string{"n1", "n2"}},
		{"n[01-04,07],gpu-a[1-2]", []string{"n01", "n02", "n03", "n04", "n07", "gpu-a1", "gpu-a2"}},
		{"n[08-11]", []string{"n08", "n09", "n10", "n11"}},
		{"a,b,c", []string{"a", "b", "c"}},
		{"rack[1-2]-n[1-2]", []string{"rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"}},
		{"node[7]", []string{"node7"}},
		{"[1-3]", []string{"1", "2", "3"}},
		{"n[1-2]x", []string{"n1x", "n2x"}},
		{"host.example.com", []string{"host.example.com"}},
	}
	for _, c := range cases {
		got, err := Expand(c.in)
		if err != nil {
			t.Errorf("Expand(%q): %v", c.in, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Expand(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestExpandErrors(t *testing.T) {
	cases := []struct{ in, wantErr string }{
		{"", "empty list"},
		{"n[1-2", "unclosed"},
		{"n1-2]", "unmatched"},
		{"n[[1]]", "nested"},
		{"n[2-1]", "below"},
		{"n[a-b]", "not a number"},
		{"n[]", "not a number"},
		{"a,,b", "empty host name"},
		{"n[0-999999999]", "more than"},
		{"n[1-2],", "empty host name"},
		{"a b", "white space"},
	}
	for _, c := range cases {
		got, err := Expand(c.in)
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("Expand(%q) = %q, %v; want error containing %q", c.in, got, err, c.wantErr)
		}
	}
}

func TestExpandCounts(t *testing.T) {
	cases := []struct {
		in   string
		want []int
	}{
		{"4", []int{4}},
		{"2(x2)", []int{2, 2}},
		{"3,1", []int{3, 1}},
		{"2(x3),1", []int{2, 2, 2, 1}},
	}
	for _, c := range cases {
		got, err := ExpandCounts(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ExpandCounts(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "x", "2(x0)", "2(3)", "2(x2", "-1", "2(x99999999)"} {
		if got, err := ExpandCounts(bad); err == nil {
			t.Errorf("ExpandCounts(%q) = %v, want an error", bad, got)
		}
	}
}

func FuzzExpand(f *testing.F) {
	for _, s := range []string{"n[01-04,07],gpu-a[1-2]", "a,b", "r[1-2]-n[3-4]", "n[", "n[1-2]]", "[0-9]", "x[08-10]y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hosts, err := Expand(s)
		if err != nil {
			return
		}
		if len(hosts) == 0 || len(hosts) > MaxHosts {
			t.Fatalf("Expand(%q) gave %d hosts", s, len(hosts))
		}
		for _, h := range hosts {
			if h == "" || strings.ContainsAny(h, "[],") {
				t.Fatalf("Expand(%q) gave bad host %q", s, h)
			}
		}
	})
}

func FuzzExpandCounts(f *testing.F) {
	for _, s := range []string{"2(x3),1", "4", "1,2,3", "2(x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		counts, err := ExpandCounts(s)
		if err == nil && (len(counts) == 0 || len(counts) > MaxHosts) {
			t.Fatalf("ExpandCounts(%q) gave %d counts", s, len(counts))
		}
	})
}
