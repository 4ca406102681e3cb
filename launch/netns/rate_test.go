package netns

import (
	"strings"
	"testing"
)

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		err  []string // each must be in the error; nil means no error
	}{
		{in: "10gbit", want: 10_000_000_000},
		{in: "100mbit", want: 100_000_000},
		{in: "500kbit", want: 500_000},
		{in: "1000000bit", want: 1_000_000},
		{in: "1000000", want: 1_000_000},
		{in: "1.5gbit", want: 1_500_000_000},
		{in: "1.1gbit", want: 1_100_000_000},
		{in: ".5gbit", want: 500_000_000},
		{in: "10GBit", want: 10_000_000_000},
		{in: "40GBIT", want: 40_000_000_000},
		{in: " 10gbit\n", want: 10_000_000_000},
		{in: "10 gbit", want: 10_000_000_000},
		{in: "+10gbit", want: 10_000_000_000},
		{in: "1e9", want: 1_000_000_000},
		{in: "2.5e3mbit", want: 2_500_000_000},
		{in: "1tbit", want: 1_000_000_000_000},
		{in: "1gibit", want: 1 << 30},
		{in: "10kbit", want: 10_000},
		{in: "10000.4", want: 10_000},

		{in: "", err: []string{"empty", "10gbit"}},
		{in: "   ", err: []string{"empty"}},
		{in: "0", err: []string{`"0"`, "zero"}},
		{in: "0gbit", err: []string{"zero"}},
		{in: "0.0mbit", err: []string{"zero"}},
		{in: "-1gbit", err: []string{`"-1gbit"`, "negative"}},
		{in: "-0", err: []string{"negative"}},
		{in: "inf", err: []string{"not a finite number"}},
		{in: "-Inf", err: []string{"not a finite number"}},
		{in: "NaN", err: []string{"not a finite number"}},
		{in: "infgbit", err: []string{"not a finite number"}},
		{in: "1e400gbit", err: []string{"above", "1tbit"}},
		{in: "gbit", err: []string{"does not start with a number"}},
		{in: "ten gbit", err: []string{"does not start with a number"}},
		{in: "10gb", err: []string{`"10gb"`, "ambiguous", "write 10gbit", "bytes per second units are not accepted"}},
		{in: "10G", err: []string{"ambiguous", "write 10gbit"}},
		{in: "10mb", err: []string{"ambiguous", "write 10mbit"}},
		{in: "10MiB", err: []string{"ambiguous", "write 10mibit"}},
		{in: "10b", err: []string{"ambiguous", "write 10bit"}},
		{in: "10gbps", err: []string{"bytes per second", "10gbit", "80gbit"}},
		{in: "1.5Mbps", err: []string{"bytes per second", "1.5mbit", "12mbit"}},
		{in: "100bps", err: []string{"bytes per second", "100bit", "800bit"}},
		{in: "10gbit/s", err: []string{"unknown unit", "10gbit"}},
		{in: "10xyz", err: []string{`unknown unit "xyz"`, "kbit, mbit, gbit"}},
		{in: "10gbitgbit", err: []string{"unknown unit"}},
		{in: "1.2.3gbit", err: []string{"unknown unit"}},
		{in: "2tbit", err: []string{`"2tbit"`, "above", "1tbit", "10gbit"}},
		{in: "1000000000001", err: []string{"above"}},
		{in: "1kbit", err: []string{`"1kbit"`, "below", "10kbit", "100mbit"}},
		{in: "0.5bit", err: []string{"below"}},
	} {
		got, err := ParseRate(tc.in)
		switch {
		case tc.err == nil && err != nil:
			t.Errorf("ParseRate(%q): %v; want %d", tc.in, err, tc.want)
		case tc.err == nil && got != tc.want:
			t.Errorf("ParseRate(%q) = %d, want %d", tc.in, got, tc.want)
		case tc.err != nil && err == nil:
			t.Errorf("ParseRate(%q) = %d, want an error", tc.in, got)
		case tc.err != nil:
			for _, w := range tc.err {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("ParseRate(%q): %q, want it to say %q", tc.in, err, w)
				}
			}
		}
	}
}

func TestFormatRate(t *testing.T) {
	for _, tc := range []struct {
		bps  uint64
		want string
	}{
		{10_000_000_000, "10gbit"},
		{1_500_000_000, "1500mbit"},
		{200_000_000, "200mbit"},
		{1_000_000_000_000, "1tbit"},
		{10_000, "10kbit"},
		{12_345, "12345bit"},
		{1 << 30, "1073741824bit"},
	} {
		got := FormatRate(tc.bps)
		if got != tc.want {
			t.Errorf("FormatRate(%d) = %q, want %q", tc.bps, got, tc.want)
		}
		if back, err := ParseRate(got); err != nil || back != tc.bps {
			t.Errorf("ParseRate(FormatRate(%d) = %q) = %d, %v", tc.bps, got, back, err)
		}
	}
}
