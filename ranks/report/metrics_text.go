package report

import (
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/procfs"
)

// Rank 0's metrics in Prometheus's text exposition format (version 0.0.4),
// written here rather than with client_golang: that library's packages
// (its default registry and collectors, protobuf, expfmt) initialise in
// every pplaunch process, the agent and each rank, which cost every start
// about half a millisecond (docs/benchmarks.md), for a handful of gauges and
// counters. The families are written as client_golang writes them (sorted,
// a family without series left out), and the common Go and process metrics
// keep their client_golang names.

// metricSet is the families served at /metrics.
type metricSet struct {
	mu   sync.Mutex
	vecs []*metricVec
}

// metricVec is one family: a gauge or a counter with label names.
type metricVec struct {
	set              *metricSet
	name, help, kind string
	labels           []string
	series           map[string]float64  // by labelKey of the label values
	values           map[string][]string // the label values of each series
}

// metricValue is one series of a family.
type metricValue struct {
	v   *metricVec
	key string
}

func (s *metricSet) add(name, help, kind string, labels []string) *metricVec {
	v := &metricVec{set: s, name: name, help: help, kind: kind, labels: labels,
		series: map[string]float64{}, values: map[string][]string{}}
	s.mu.Lock()
	s.vecs = append(s.vecs, v)
	s.mu.Unlock()
	return v
}

// WithLabelValues is the series with these label values (one per label name).
func (v *metricVec) WithLabelValues(values ...string) metricValue {
	key := strings.Join(values, "\xff")
	v.set.mu.Lock()
	if _, ok := v.values[key]; !ok {
		v.values[key] = slices.Clone(values)
		v.series[key] = 0
	}
	v.set.mu.Unlock()
	return metricValue{v, key}
}

func (m metricValue) Set(x float64) {
	m.v.set.mu.Lock()
	m.v.series[m.key] = x
	m.v.set.mu.Unlock()
}

func (m metricValue) Add(x float64) {
	m.v.set.mu.Lock()
	m.v.series[m.key] += x
	m.v.set.mu.Unlock()
}

// write writes every family that has a series, sorted by name, each series
// sorted by its label values, then the Go and process metrics.
func (s *metricSet) write(w io.Writer) error {
	var b strings.Builder
	s.mu.Lock()
	vecs := slices.Clone(s.vecs)
	slices.SortFunc(vecs, func(a, b *metricVec) int { return strings.Compare(a.name, b.name) })
	for _, v := range vecs {
		keys := make([]string, 0, len(v.series))
		for k := range v.series {
			keys = append(keys, k)
		}
		if len(keys) == 0 {
			continue // as client_golang: a family with no series is not written
		}
		slices.Sort(keys)
		writeFamily(&b, v.name, v.help, v.kind)
		for _, k := range keys {
			writeSample(&b, v.name, v.labels, v.values[k], v.series[k])
		}
	}
	s.mu.Unlock()
	runtimeMetrics(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeFamily(b *strings.Builder, name, help, kind string) {
	help = strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(help)
	b.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " " + kind + "\n")
}

func writeSample(b *strings.Builder, name string, labels, values []string, x float64) {
	b.WriteString(name)
	if len(labels) > 0 {
		b.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(l + `="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(values[i]) + `"`)
		}
		b.WriteByte('}')
	}
	b.WriteString(" " + formatValue(x) + "\n")
}

// formatValue writes a sample's value as the format spells it.
func formatValue(x float64) string {
	switch {
	case math.IsInf(x, 1):
		return "+Inf"
	case math.IsInf(x, -1):
		return "-Inf"
	case math.IsNaN(x):
		return "NaN"
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// runtimeMetrics writes the Go runtime's and this process's own metrics,
// under the names client_golang's Go and process collectors give them.
func runtimeMetrics(b *strings.Builder) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	gauge := func(name, help string, x float64) {
		writeFamily(b, name, help, "gauge")
		writeSample(b, name, nil, nil, x)
	}
	gauge("go_goroutines", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine()))
	gauge("go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use.", float64(ms.HeapAlloc))
	gauge("go_memstats_sys_bytes", "Number of bytes obtained from system.", float64(ms.Sys))
	p, err := procfs.NewProc(os.Getpid())
	if err != nil {
		return
	}
	if st, err := p.Stat(); err == nil {
		writeFamily(b, "process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", "counter")
		writeSample(b, "process_cpu_seconds_total", nil, nil, st.CPUTime())
		gauge("process_resident_memory_bytes", "Resident memory size in bytes.", float64(st.ResidentMemory()))
		gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", float64(st.VirtualMemory()))
		if start, err := st.StartTime(); err == nil {
			gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", start)
		}
	}
	if n, err := p.FileDescriptorsLen(); err == nil {
		gauge("process_open_fds", "Number of open file descriptors.", float64(n))
	}
}
