package report

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/pplaunch/pplaunch/contract"
	"github.com/pplaunch/pplaunch/ranks"
	"github.com/pplaunch/pplaunch/ranks/live"
)

// metricsServer is rank 0's Prometheus endpoint: the latest step's record
// as gauges, the transfers as counters, beside the Go runtime's and the
// process's own metrics; and the live view of its board.
type metricsServer struct {
	board                                         *live.Board
	history                                       *liveHistory // nil without an agent
	srv                                           *http.Server
	done                                          chan struct{}
	step, steps, loss, valLoss, tps, stepS, gnorm *metricVec // gauges
	lr, bubble, peak, rss, device                 *metricVec // gauges
	sent, recv, xferS                             *metricVec // counters
}

func gauge(reg *metricSet, name, help string, labels ...string) *metricVec {
	return reg.add("pplaunch_"+name, help, "gauge", labels)
}

func counter(reg *metricSet, name, help string, labels ...string) *metricVec {
	return reg.add("pplaunch_"+name, help, "counter", labels)
}

// newMetricsServer declares the families in reg.
func newMetricsServer(reg *metricSet, board *live.Board) *metricsServer {
	return &metricsServer{
		board:   board,
		done:    make(chan struct{}),
		step:    gauge(reg, "train_step", "optimizer steps completed"),
		steps:   gauge(reg, "train_steps", "optimizer steps the run is to take"),
		loss:    gauge(reg, "train_loss", "training loss of the latest step"),
		valLoss: gauge(reg, "train_val_loss", "latest validation loss"),
		tps:     gauge(reg, "train_tokens_per_second", "tokens per second of the latest step"),
		stepS:   gauge(reg, "train_step_seconds", "wall time of the latest step"),
		gnorm:   gauge(reg, "train_grad_norm", "global gradient norm of the latest step, before clipping"),
		lr:      gauge(reg, "train_learning_rate", "learning rate of the latest step"),
		bubble:  gauge(reg, "train_bubble_ratio", "idle fraction of replica 0's pipeline in the latest step: measured, or predicted by simulating the measured action times", "source"),
		peak:    gauge(reg, "rank_peak_activation_bytes", "activation bytes a rank's stages held at most in the latest step", "rank"),
		rss:     gauge(reg, "rank_rss_bytes", "a rank's resident set size at the end of the latest step", "rank"),
		device:  gauge(reg, "rank_peak_device_memory_bytes", "most device memory a rank's tensors held in the step (device backends only)", "rank"),
		sent:    counter(reg, "transfer_sent_bytes_total", "activation and gradient bytes a rank sent to a peer", "rank", "peer"),
		recv:    counter(reg, "transfer_received_bytes_total", "activation and gradient bytes a rank received from a peer", "rank", "peer"),
		xferS:   counter(reg, "transfer_seconds_total", "seconds a rank's transfer actions with a peer took", "rank", "peer"),
	}
}

// startMetrics listens on cfg.MetricsAddr, serves the live view of board at
// / and the metrics at /metrics, and prints where, a line a scraper (or a
// test) can wait for. Under the agent, board starts from the curve an
// earlier attempt kept (liveHistory).
func startMetrics(cfg Config, board *live.Board) (*metricsServer, error) {
	progress := cfg.getenv(contract.EnvProgress)
	ln, err := listenKept(listenAddr(cfg.MetricsAddr), progress)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	reg := &metricSet{}
	m := newMetricsServer(reg, board)
	m.steps.WithLabelValues().Set(float64(cfg.Train.Steps))
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		reg.write(w)
	})
	mux.Handle("/", live.Handler(board))
	m.srv = &http.Server{Handler: mux}
	m.history = openLiveHistory(progress, board)
	go func() {
		defer close(m.done)
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(cfg.Out, "metrics: stopped serving: %v\n", err)
		}
	}()
	fmt.Fprintf(cfg.Out, "metrics: serving http://%s/metrics\n", ln.Addr())
	fmt.Fprintf(cfg.Out, "live: the job's view at http://%s/ (in a terminal: pplaunch top %s)\n", ln.Addr(), ln.Addr())
	return m, nil
}

// observe sets the metrics from a step's record.
func (m *metricsServer) observe(r ranks.StepRecord) {
	m.board.Observe(r)
	m.history.add(live.PointOf(r))
	m.step.WithLabelValues().Set(float64(r.Step))
	m.loss.WithLabelValues().Set(r.Loss)
	if r.ValLoss != nil {
		m.valLoss.WithLabelValues().Set(*r.ValLoss)
	}
	m.tps.WithLabelValues().Set(r.TokensPerS)
	m.stepS.WithLabelValues().Set(r.StepS)
	m.gnorm.WithLabelValues().Set(r.GradNorm)
	m.lr.WithLabelValues().Set(r.LR)
	m.bubble.WithLabelValues("measured").Set(r.BubbleMeasured)
	m.bubble.WithLabelValues("predicted").Set(r.BubblePredicted)
	for i, v := range r.PeakActivation {
		m.peak.WithLabelValues(strconv.Itoa(i)).Set(float64(v))
	}
	for i, v := range r.RSS {
		m.rss.WithLabelValues(strconv.Itoa(i)).Set(float64(v))
	}
	for i, v := range r.PeakDevice {
		m.device.WithLabelValues(strconv.Itoa(i)).Set(float64(v))
	}
	for _, t := range r.Transfers {
		rank, peer := strconv.Itoa(t.Rank), strconv.Itoa(t.Peer)
		m.sent.WithLabelValues(rank, peer).Add(float64(t.SentBytes))
		m.recv.WithLabelValues(rank, peer).Add(float64(t.RecvBytes))
		m.xferS.WithLabelValues(rank, peer).Add(t.Seconds)
	}
}

// close marks the attempt ended, ok if as asked (the live view's streams
// send that last state and end), and stops serving, waiting a little for
// those streams.
func (m *metricsServer) close(outcome string, ok bool) {
	m.board.End(outcome, ok)
	m.history.close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if m.srv.Shutdown(ctx) != nil {
		m.srv.Close()
	}
	<-m.done
}
