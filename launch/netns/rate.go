package netns

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Link rates ParseRate and LimitRate accept, in bits per second. Below MinRate,
// tbf's bucket of 64 KiB holds so long a time at the rate that tc's
// 32-bit count of scheduler ticks overflows (it does near 4 minutes); above
// MaxRate, no veth comes close and the value is most likely a slip.
const (
	MinRate uint64 = 10_000            // 10kbit
	MaxRate uint64 = 1_000_000_000_000 // 1tbit
)

// rateUnits are tc's units of bits per second, lower case (tc reads them in
// any case). A bare number is bits per second, as it is for tc.
var rateUnits = map[string]uint64{
	"":      1,
	"bit":   1,
	"kbit":  1e3,
	"mbit":  1e6,
	"gbit":  1e9,
	"tbit":  1e12,
	"kibit": 1 << 10,
	"mibit": 1 << 20,
	"gibit": 1 << 30,
	"tibit": 1 << 40,
}

// byteUnits are tc's units of bytes per second, which ParseRate refuses: to tc
// "10gbps" is 80gbit, while most people who type it mean 10gbit.
var byteUnits = map[string]uint64{
	"bps": 8, "kbps": 8e3, "mbps": 8e6, "gbps": 8e9, "tbps": 8e12,
	"kibps": 8 << 10, "mibps": 8 << 20, "gibps": 8 << 30, "tibps": 8 << 40,
}

// A number as people write one: digits, an optional fraction and exponent.
var rateNumber = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?`)

// ParseRate reads a link rate written in tc's units of bits per second, in any
// case: "10gbit", "100mbit", "500kbit", "1.5gbit", "1000000bit" or a bare
// number of bits per second ("1000000"); kibit, mibit, gibit and tibit are
// powers of 1024. It refuses tc's units of bytes per second (bps, kbps, mbps,
// gbps...) and the ambiguous "10gb", "10g": say gbit. It refuses zero,
// negative and non-finite rates, and rates outside MinRate..MaxRate
// (10kbit..1tbit). A fraction of a bit per second is rounded.
func ParseRate(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("link rate is empty: give one like 10gbit")
	}
	num := rateNumber.FindString(t)
	unit := strings.ToLower(strings.TrimSpace(t[len(num):]))
	if num == "" {
		rest := strings.ToLower(strings.TrimLeft(t, "+-"))
		if strings.HasPrefix(rest, "inf") || strings.HasPrefix(rest, "nan") {
			return 0, fmt.Errorf("link rate %q is not a finite number: give one like 10gbit", s)
		}
		return 0, fmt.Errorf("link rate %q does not start with a number: give one like 10gbit", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("link rate %q: %v: give one like 10gbit", s, err)
	}
	if v < 0 || (v == 0 && strings.HasPrefix(num, "-")) {
		return 0, fmt.Errorf("link rate %q is negative: give one like 10gbit", s)
	}
	scale, ok := rateUnits[unit]
	if !ok {
		if bs, isBytes := byteUnits[unit]; isBytes {
			return 0, fmt.Errorf("link rate %q: %s is bytes per second to tc, which is not accepted here: write bits per second, %s%s (or %s if bytes were meant)",
				s, unit, num, bitUnit(unit), formatRateFloat(v*float64(bs)))
		}
		switch unit {
		case "b", "k", "m", "g", "t", "kb", "mb", "gb", "tb", "ki", "mi", "gi", "ti", "kib", "mib", "gib", "tib":
			return 0, fmt.Errorf("link rate %q: %s is ambiguous (bits or bytes?): write %s%s (bits per second); bytes per second units are not accepted",
				s, unit, num, bitUnit(unit))
		}
		return 0, fmt.Errorf("link rate %q: unknown unit %q: use bit, kbit, mbit, gbit or tbit (kibit, mibit, gibit, tibit for powers of 1024), like 10gbit", s, unit)
	}
	bits := v * float64(scale)
	if math.IsInf(bits, 0) {
		return 0, fmt.Errorf("link rate %q is above the most accepted, %s: give one like 10gbit", s, FormatRate(MaxRate))
	}
	if bits == 0 {
		return 0, fmt.Errorf("link rate %q is zero, which would stop all traffic: give one like 10gbit", s)
	}
	if bits > float64(MaxRate) {
		return 0, fmt.Errorf("link rate %s is above the most accepted, %s: give one like 10gbit", quoteRate(s, bits), FormatRate(MaxRate))
	}
	r := uint64(math.Round(bits))
	if r < MinRate {
		return 0, fmt.Errorf("link rate %s is below the least accepted, %s: give one like 100mbit", quoteRate(s, bits), FormatRate(MinRate))
	}
	return r, nil
}

// FormatRate writes bits per second in the largest of tc's decimal units that
// holds it exactly: 10000000000 is "10gbit", 1500000000 "1500mbit". ParseRate
// reads it back.
func FormatRate(bps uint64) string {
	for _, u := range []struct {
		name  string
		scale uint64
	}{{"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}} {
		if bps >= u.scale && bps%u.scale == 0 {
			return fmt.Sprintf("%d%s", bps/u.scale, u.name)
		}
	}
	return fmt.Sprintf("%dbit", bps)
}

// formatRateFloat writes a rate that may not be a whole number of bits, for
// error messages.
func formatRateFloat(bits float64) string {
	for _, u := range []struct {
		name  string
		scale float64
	}{{"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}} {
		if bits >= u.scale {
			return strconv.FormatFloat(bits/u.scale, 'g', 6, 64) + u.name
		}
	}
	return strconv.FormatFloat(bits, 'g', 6, 64) + "bit"
}

// quoteRate quotes what the user wrote, and what it comes to if that reads
// differently: "2e12" (2tbit).
func quoteRate(s string, bits float64) string {
	q := strconv.Quote(s)
	if f := formatRateFloat(bits); !strings.EqualFold(strings.TrimSpace(s), f) {
		q += " (" + f + ")"
	}
	return q
}

// bitUnit is the unit of bits per second a unit of bytes, or an ambiguous one,
// stands for: "gbps" and "gb" give "gbit", "mib" "mibit".
func bitUnit(unit string) string {
	return strings.TrimSuffix(strings.TrimSuffix(unit, "ps"), "b") + "bit"
}
