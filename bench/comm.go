package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/pplaunch/pplaunch/collective"
)

// Size is a byte count written with an optional binary suffix: 8, 64K, 16M,
// 256MiB, 1G.
type Size int64

func (s *Size) UnmarshalText(b []byte) error {
	t := strings.TrimSpace(string(b))
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	mult, ok := map[string]int64{"": 1, "B": 1,
		"K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10,
		"M": 1 << 20, "MB": 1 << 20, "MIB": 1 << 20,
		"G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30}[strings.ToUpper(t[i:])]
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil || !ok || n > (1<<62)/mult {
		return fmt.Errorf("size %q: want a byte count such as 8, 64K, 16M or 256MiB", t)
	}
	*s = Size(n * mult)
	return nil
}

func (s Size) String() string {
	for _, u := range []struct {
		n    int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if int64(s) >= u.n && int64(s)%u.n == 0 {
			return fmt.Sprintf("%d%s", int64(s)/u.n, u.name)
		}
	}
	return fmt.Sprintf("%dB", int64(s))
}

// P2POptions are the flags of `pplaunch bench p2p`.
type P2POptions struct {
	Min     Size `arg:"--min" default:"8" help:"smallest message (bytes; K, M, G suffixes)"`
	Max     Size `arg:"--max" default:"256M" help:"largest message; sizes double from --min"`
	Iters   int  `arg:"--iters" help:"messages per size and repetition (default: about 256 MiB worth, 4 to 1000)"`
	Reps    int  `arg:"--reps" default:"3" help:"repetitions per size, alternating ours and the ceiling; the median is reported"`
	LatMax  Size `arg:"--lat-max" default:"64K" help:"largest size whose ping-pong latency is measured"`
	JSON    bool `arg:"--json" help:"print one JSON object per size instead of the table"`
	NoPlain bool `arg:"--no-ceiling" help:"skip the plain-socket ceiling"`
}

// AllReduceOptions are the flags of `pplaunch bench allreduce`.
type AllReduceOptions struct {
	Min     Size `arg:"--min" default:"8" help:"smallest buffer (bytes of float32; K, M, G suffixes)"`
	Max     Size `arg:"--max" default:"256M" help:"largest buffer; sizes double from --min"`
	Iters   int  `arg:"--iters" help:"all-reduces per size and repetition (default: about 256 MiB worth, 4 to 1000)"`
	Reps    int  `arg:"--reps" default:"3" help:"repetitions per size; the median is reported"`
	JSON    bool `arg:"--json" help:"print one JSON object per size instead of the table"`
	NoPlain bool `arg:"--no-ceiling" help:"skip the plain-socket ceiling between ranks 0 and 1"`
}

// Result is one row of a report (and one --json object).
type Result struct {
	Bytes        int64   `json:"bytes"`
	Iters        int     `json:"iters"`
	Seconds      float64 `json:"seconds"`
	AlgBW        float64 `json:"algbw_gbps"`
	BusBW        float64 `json:"busbw_gbps"`
	CeilingBW    float64 `json:"ceiling_gbps,omitempty"`
	Ratio        float64 `json:"ratio,omitempty"`
	LatencyUS    float64 `json:"lat_us,omitempty"`
	CeilingLatUS float64 `json:"ceiling_lat_us,omitempty"`
	LatRatio     float64 `json:"lat_ratio,omitempty"`
	Wrong        int     `json:"wrong"`
}

// sizes lists the sizes from lo doubling up to hi; zero means the flag's
// default, a negative size or count is an error.
func sizes(lo, hi Size, iters, reps int) ([]int64, error) {
	switch {
	case lo < 0:
		return nil, fmt.Errorf("--min %d: a size must not be negative", int64(lo))
	case hi < 0:
		return nil, fmt.Errorf("--max %d: a size must not be negative", int64(hi))
	case iters < 0:
		return nil, fmt.Errorf("--iters %d: must be positive (or 0 for the default)", iters)
	case reps < 0:
		return nil, fmt.Errorf("--reps %d: must be positive (or 0 for the default)", reps)
	}
	if lo == 0 {
		lo = 8
	}
	if hi == 0 {
		hi = 256 << 20
	}
	if lo > hi {
		return nil, fmt.Errorf("--min %v is larger than --max %v", lo, hi)
	}
	var out []int64
	for s := int64(lo); s <= int64(hi); s *= 2 {
		out = append(out, s)
	}
	return out, nil
}

func itersFor(fixed int, size int64) int {
	if fixed > 0 {
		return fixed
	}
	return int(min(1000, max(4, (256<<20)/size)))
}

const gb = 1e9

var (
	tagData = collective.Tag{Kind: collective.Data}
	tagAck  = collective.Tag{Kind: collective.Control}
)

func opt(v float64, format string) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf(format, v)
}

// report writes nccl-tests-style tables or JSON lines, on rank 0 only.
type report struct {
	w     io.Writer
	json  bool
	on    bool
	wrong int
}

func newReport(w io.Writer, asJSON, on bool) *report { return &report{w: w, json: asJSON, on: on} }

// header prints the title and the column names, right-aligned in the widths
// of the row format (its first column loses one character to the '#').
func (r *report) header(title, format string, cols ...any) {
	if !r.on || r.json {
		return
	}
	line := fmt.Sprintf(format, cols...)
	fmt.Fprintf(r.w, "# %s\n#\n#%s\n", title, line[1:])
}

func (r *report) row(res Result, line string) {
	r.wrong += res.Wrong
	if !r.on {
		return
	}
	if r.json {
		b, _ := json.Marshal(res)
		fmt.Fprintln(r.w, string(b))
		return
	}
	fmt.Fprintln(r.w, line)
}
