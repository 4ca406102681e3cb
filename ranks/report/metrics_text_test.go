package report

import (
	"math"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The text the metrics are served as: families sorted by name, series by
// their label values, values and label values spelled as the format wants,
// a family without series left out; and Prometheus's own parser reads it.
func TestMetricSetText(t *testing.T) {
	var s metricSet
	loss := s.add("pplaunch_train_loss", "training loss", "gauge", nil)
	sent := s.add("pplaunch_sent_bytes_total", "bytes sent\nto a peer", "counter", []string{"rank", "peer"})
	s.add("pplaunch_unset", "never set", "gauge", []string{"rank"})
	loss.WithLabelValues().Set(2.5)
	sent.WithLabelValues("1", "0").Add(3)
	sent.WithLabelValues("0", `a"b\`).Add(1)
	sent.WithLabelValues("0", `a"b\`).Add(1e21)
	s.add("pplaunch_inf", "", "gauge", nil).WithLabelValues().Set(math.Inf(1))
	var b strings.Builder
	if err := s.write(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	want := `# HELP pplaunch_inf 
# TYPE pplaunch_inf gauge
pplaunch_inf +Inf
# HELP pplaunch_sent_bytes_total bytes sent\nto a peer
# TYPE pplaunch_sent_bytes_total counter
pplaunch_sent_bytes_total{rank="0",peer="a\"b\\"} 1e+21
pplaunch_sent_bytes_total{rank="1",peer="0"} 3
# HELP pplaunch_train_loss training loss
# TYPE pplaunch_train_loss gauge
pplaunch_train_loss 2.5
`
	if !strings.HasPrefix(text, want) {
		t.Errorf("text:\n%s\nwant it to begin with:\n%s", text, want)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("Prometheus's parser: %v\n%s", err, text)
	}
	if _, ok := fams["pplaunch_unset"]; ok {
		t.Errorf("a family without series was written")
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("no %s", name)
		}
	}
}
