package main

// metricsFlags choose where rank 0 serves Prometheus metrics.
type metricsFlags struct {
	MetricsAddr string `arg:"--metrics-addr" placeholder:"HOST:PORT" help:"serve Prometheus metrics on this address from rank 0 (e.g. :9400; port 0 picks a free one, printed)"`
}
