package plan

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseBytes reads a size such as 12GiB, 512MiB, 1.5GB or 1000 (bytes).
func ParseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   float64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}}
	t := strings.TrimSpace(s)
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f <= 0 || math.IsInf(f, 0) || f*mult > 1<<62 {
		return 0, fmt.Errorf("%q: want a positive size such as 12GiB, 512MiB, 1.5GB or a byte count", s)
	}
	return int64(f * mult), nil
}

// FormatBytes writes n in the largest binary unit that keeps it at least 1.
func FormatBytes(n int64) string {
	f := float64(n)
	for _, u := range []string{"B", "KiB", "MiB", "GiB"} {
		if f < 1024 || u == "GiB" {
			switch {
			case u == "B":
				return fmt.Sprintf("%d B", n)
			case f < 10:
				return fmt.Sprintf("%.2f %s", f, u)
			case f < 100:
				return fmt.Sprintf("%.1f %s", f, u)
			}
			return fmt.Sprintf("%.0f %s", f, u)
		}
		f /= 1024
	}
	return ""
}
