package report

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/contract"
	"github.com/pplaunch/pplaunch/ranks"
)

// TestMetricsEndpoint: --metrics-addr prints where it serves, /metrics holds
// the latest step's gauges and the summed transfers, and Finish stops
// serving.
func TestMetricsEndpoint(t *testing.T) {
	var buf strings.Builder
	r, err := Open(Config{Train: ranks.TrainConfig{Steps: 5, Schedule: "1f1b"}, World: 1, Compute: "cpu", Out: &buf, MetricsAddr: "127.0.0.1:0",
		Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m := regexp.MustCompile(`(?m)^metrics: serving (http://\S+/metrics)$`).FindStringSubmatch(buf.String())
	if m == nil || !strings.Contains(buf.String(), "live: the job's view at http://") {
		t.Fatalf("no serving lines:\n%s", buf.String())
	}
	for step := 1; step <= 2; step++ {
		r.Step(ranks.StepRecord{Step: step, Loss: 3, PeakActivation: []int64{64}, RSS: []int64{1 << 20},
			Transfers: []ranks.PeerTraffic{{Rank: 0, Peer: 1, SentBytes: 100, Seconds: 0.5}}})
	}
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pplaunch_train_step 2\n", "pplaunch_train_steps 5\n", "pplaunch_train_loss 3\n", `pplaunch_rank_peak_activation_bytes{rank="0"} 64` + "\n",
		`pplaunch_transfer_sent_bytes_total{rank="0",peer="1"} 200` + "\n", `pplaunch_transfer_seconds_total{rank="0",peer="1"} 1` + "\n", "go_goroutines "} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "pplaunch_train_val_loss") {
		t.Errorf("a validation loss without an evaluation:\n%s", b)
	}
	if err := r.Finish(&ranks.Result{Steps: 2}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(m[1]); err == nil {
		t.Errorf("still serving after Finish")
	}
}

// TestMetricsKeepPort: under the agent, a free port is kept in the run
// directory, so a restarted group's rank 0 listens where the first did; and
// the live view's curve is kept beside it, a line cut by a kill left out.
func TestMetricsKeepPort(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{contract.EnvProgress: filepath.Join(dir, "rank-0.progress")}
	cfg := Config{Train: ranks.TrainConfig{Steps: 5, Schedule: "1f1b"}, World: 1, Compute: "cpu", MetricsAddr: "127.0.0.1:0", Getenv: func(k string) string { return env[k] }}
	var addrs []string
	for attempt := range 2 {
		var buf strings.Builder
		cfg.Out = &buf
		r, err := Open(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if attempt == 0 {
			r.Step(ranks.StepRecord{Step: 1, Loss: 3})
			r.Close()
			f, err := os.OpenFile(filepath.Join(dir, "live-series.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(`{"step":2,"lo`) // killed mid-line
			f.Close()
		} else {
			if pts := r.prom.board.Snapshot(time.Now()).Series; len(pts) != 1 || pts[0].Step != 1 {
				t.Errorf("the restarted view's curve: %+v, want step 1 alone", pts)
			}
			r.Close()
		}
		addrs = append(addrs, regexp.MustCompile(`serving http://(\S+)/metrics`).FindStringSubmatch(buf.String())[1])
	}
	if addrs[0] != addrs[1] {
		t.Errorf("the restart listens on %s, the first attempt on %s", addrs[1], addrs[0])
	}
}

// TestCheckMetricsAddr: an address that cannot be listened on as given is
// refused before any rank starts, naming the flag.
func TestCheckMetricsAddr(t *testing.T) {
	for _, tc := range []struct{ addr, err string }{
		{"", ""}, {":9400", ""}, {"0.0.0.0:0", ""},
		{"9400", `--metrics-addr "9400": address 9400: missing port in address (want HOST:PORT or :PORT, e.g. :9400)`},
		{":http", `--metrics-addr ":http": port "http" is not a number from 0 to 65535`},
		{":70000", `port "70000" is not a number`},
	} {
		err := CheckMetricsAddr(tc.addr)
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: %v, want %q", tc.addr, err, tc.err)
		}
	}
}
