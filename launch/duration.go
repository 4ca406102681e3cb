package launch

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration is a duration flag: Go's form (2s, 5m, 1h30m) or a bare number of
// seconds (2, 0.5), which is how torchrun takes --rdzv-timeout and how users
// coming from it write them. The flag structs use it through
// encoding.TextUnmarshaler, which go-arg prefers to its own parsing.
type Duration time.Duration

// UnmarshalText parses seconds or a Go duration.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// ParseDuration parses a bare number as seconds, else a Go duration.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if secs, err := strconv.ParseFloat(s, 64); err == nil && !strings.ContainsAny(s, "xXpP") {
		if math.IsNaN(secs) || math.Abs(secs) > float64(math.MaxInt64)/float64(time.Second) {
			return 0, fmt.Errorf("duration %q: out of range", s)
		}
		return time.Duration(math.Round(secs * float64(time.Second))), nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: want seconds (30, 0.5) or a Go duration (30s, 5m, 1h30m)", s)
	}
	return v, nil
}

// UnmarshalJSON reads a JSON string as UnmarshalText does, and a JSON number
// as seconds, so that a config file may say "timeout": 30 or "timeout": "5m".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		return d.UnmarshalText([]byte(s))
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration %s: want seconds (30) or a string (\"30s\", \"5m\")", b)
	}
	return d.UnmarshalText([]byte(n.String()))
}

// MarshalText writes Go's form (5m0s), which UnmarshalText reads back.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// String is Go's form of the duration.
func (d Duration) String() string { return time.Duration(d).String() }

// D is the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }
