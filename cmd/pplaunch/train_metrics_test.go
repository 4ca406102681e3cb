package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/pplaunch/pplaunch/ranks"
)

// TestTrainPrometheusEndpoint scrapes --metrics-addr during a 2-rank run
// with net/http and parses the answer with the Prometheus text parser. Rank
// 0 waits before step 3 until it is signalled (a test hook), so the scrape
// always lands mid-run, after two steps: the endpoint says so, with every
// rank's memory and the transfers between the two stages.
func TestTrainPrometheusEndpoint(t *testing.T) {
	jobs <- struct{}{}
	defer func() { <-jobs }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"--nproc", "2", "--standalone", "--grace-period", "60s", "train"}, tinyModel...)
	args = append(args, "--steps", "6", "--checkpoint-dir", t.TempDir(), "--metrics-addr", "127.0.0.1:0", "--sample-tokens", "0")
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Env = append(os.Environ(), ranks.HoldEnv+"=0:2")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	addr, held := make(chan string, 1), make(chan struct{})
	var log strings.Builder
	lines := func(r io.Reader, each func(string)) {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			each(sc.Text())
		}
	}
	serving := regexp.MustCompile(`^\[rank 0\] metrics: serving (http://\S+/metrics)$`)
	outDone, errDone := make(chan struct{}), make(chan string, 1)
	go func() {
		defer close(outDone)
		lines(stdout, func(l string) {
			if m := serving.FindStringSubmatch(l); m != nil {
				addr <- m[1]
			}
		})
	}()
	go func() {
		var b strings.Builder
		lines(stderr, func(l string) {
			b.WriteString(l + "\n")
			if strings.Contains(l, "waiting for a preemption signal before step 2") {
				close(held)
			}
		})
		errDone <- b.String()
	}()
	var url string
	select {
	case url = <-addr:
	case <-outDone:
		t.Fatalf("no metrics line; stderr:\n%s", <-errDone)
	}
	select {
	case <-held:
	case s := <-errDone:
		t.Fatalf("rank 0 never held before step 2:\n%s", s)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("scrape of %s: %v", url, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	log.WriteString(<-errDone)

	value := func(name string, labels ...string) (float64, bool) {
		f := fams[name]
		if f == nil {
			return 0, false
		}
	next:
		for _, m := range f.Metric {
			for i := 0; i+1 < len(labels); i += 2 {
				if labelValue(m, labels[i]) != labels[i+1] {
					continue next
				}
			}
			switch {
			case m.Gauge != nil:
				return m.Gauge.GetValue(), true
			case m.Counter != nil:
				return m.Counter.GetValue(), true
			}
		}
		return 0, false
	}
	// One micro-batch: 2 sequences of 16 positions of width 32, float32.
	const msg = 2 * 16 * 32 * 4
	for _, c := range []struct {
		name   string
		labels []string
		ok     func(v float64) bool
		want   string
	}{
		{"pplaunch_train_step", nil, func(v float64) bool { return v == 2 }, "2 (held before the third)"},
		{"pplaunch_train_steps", nil, func(v float64) bool { return v == 6 }, "6"},
		{"pplaunch_train_loss", nil, func(v float64) bool { return v > 0 && v < 10 }, "a loss"},
		{"pplaunch_train_tokens_per_second", nil, func(v float64) bool { return v > 0 }, "positive"},
		{"pplaunch_train_step_seconds", nil, func(v float64) bool { return v > 0 }, "positive"},
		{"pplaunch_train_bubble_ratio", []string{"source", "measured"}, func(v float64) bool { return v >= 0 && v < 1 }, "a fraction"},
		{"pplaunch_train_bubble_ratio", []string{"source", "predicted"}, func(v float64) bool { return v >= 0 && v < 1 }, "a fraction"},
		{"pplaunch_rank_peak_activation_bytes", []string{"rank", "1"}, func(v float64) bool { return v > 0 }, "positive"},
		{"pplaunch_rank_rss_bytes", []string{"rank", "1"}, func(v float64) bool { return v > 1<<20 }, "over 1 MiB"},
		// 8 micro-batches a step (the default), two steps.
		{"pplaunch_transfer_sent_bytes_total", []string{"rank", "0", "peer", "1"}, func(v float64) bool { return v == 2*8*msg }, fmt.Sprint(2 * 8 * msg)},
		{"pplaunch_transfer_received_bytes_total", []string{"rank", "1", "peer", "0"}, func(v float64) bool { return v == 2*8*msg }, fmt.Sprint(2 * 8 * msg)},
		{"pplaunch_transfer_seconds_total", []string{"rank", "1", "peer", "0"}, func(v float64) bool { return v > 0 }, "positive"},
	} {
		v, ok := value(c.name, c.labels...)
		if !ok || !c.ok(v) {
			t.Errorf("%s%v = %v (present %v), want %s", c.name, c.labels, v, ok, c.want)
		}
	}
	if _, ok := fams["pplaunch_rank_peak_device_memory_bytes"]; ok {
		t.Errorf("device memory reported by the CPU backend")
	}
	if t.Failed() {
		t.Logf("stderr:\n%s", log.String())
	}
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
