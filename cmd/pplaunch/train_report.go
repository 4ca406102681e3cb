package main

import (
	"io"
	"os"

	"github.com/pplaunch/pplaunch/ranks"
	"github.com/pplaunch/pplaunch/ranks/report"
)

// metricsFlags choose where rank 0 serves Prometheus metrics.
type metricsFlags struct {
	MetricsAddr string `arg:"--metrics-addr" placeholder:"HOST:PORT" help:"serve the live view (/, /api/state; pplaunch top reads it) and Prometheus metrics (/metrics) from rank 0 on this address; a port alone (:9400) listens on loopback only, give 0.0.0.0:9400 for every interface (port 0: a free one; the address is printed)"`
}

// reportConfig is rank 0's reporting of the run cfg in a world of world ranks
// computing on compute, to stdout and the files the flags name.
func (c *trainCmd) reportConfig(cfg ranks.TrainConfig, compute string, world int, stdout io.Writer) report.Config {
	return report.Config{
		Train: cfg, World: world, Compute: compute, Out: stdout,
		TTY:     os.Getenv(terminalEnv) == "1" || isTerminal(stdout),
		Metrics: c.Metrics, Trace: c.Trace, TraceSVG: c.TraceSVG, TraceSteps: c.TraceSteps,
		MetricsAddr: c.MetricsAddr, Profile: c.Profile,
	}
}
