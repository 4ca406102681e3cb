package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/alexflint/go-arg"
)

// Every duration flag takes bare seconds, as torchrun's do, and Go's form;
// the defaults (written in Go's form) still parse.
func TestDurationFlags(t *testing.T) {
	parse := func(args ...string) (cli, error) {
		var c cli
		p, err := arg.NewParser(arg.Config{Program: "pplaunch"}, &c)
		if err != nil {
			t.Fatal(err)
		}
		return c, p.Parse(args)
	}
	c, err := parse("--grace-period", "2", "--rdzv-timeout", "30", "train", "--timeout", "45")
	if err != nil {
		t.Fatal(err)
	}
	if c.Flags.GracePeriod.D() != 2*time.Second || c.Flags.RdzvTimeout.D() != 30*time.Second || c.Train.Timeout.D() != 45*time.Second {
		t.Fatalf("seconds: grace %v, rdzv %v, timeout %v", c.Flags.GracePeriod, c.Flags.RdzvTimeout, c.Train.Timeout)
	}
	cfg, err := c.Train.config()
	if err != nil || cfg.Timeout != 45*time.Second {
		t.Fatalf("train config timeout %v, %v", cfg.Timeout, err)
	}
	c, err = parse("--grace-period", "500ms", "train", "--timeout", "5m")
	if err != nil || c.Flags.GracePeriod.D() != 500*time.Millisecond || c.Train.Timeout.D() != 5*time.Minute {
		t.Fatalf("Go form: %v, %v, %v", c.Flags.GracePeriod, c.Train.Timeout, err)
	}
	c, err = parse("train")
	if err != nil || c.Flags.GracePeriod.D() != 10*time.Second || c.Flags.RdzvTimeout.D() != 15*time.Minute || c.Train.Timeout.D() != 5*time.Minute {
		t.Fatalf("defaults: %v, %v, %v, %v", c.Flags.GracePeriod, c.Flags.RdzvTimeout, c.Train.Timeout, err)
	}
	for _, args := range [][]string{{"bench", "p2p", "--timeout", "1.5"}, {"bench", "allreduce", "--timeout", "1.5"}} {
		c, err = parse(args...)
		if err != nil {
			t.Fatal(err)
		}
		got := c.Bench.P2P
		if got == nil {
			if c.Bench.AllReduce.Timeout.D() != 1500*time.Millisecond {
				t.Errorf("%v: %v", args, c.Bench.AllReduce.Timeout)
			}
		} else if got.Timeout.D() != 1500*time.Millisecond {
			t.Errorf("%v: %v", args, got.Timeout)
		}
	}
	t.Setenv("PPLAUNCH_GRACE_PERIOD", "3")
	if c, err = parse("train"); err != nil || c.Flags.GracePeriod.D() != 3*time.Second {
		t.Fatalf("PPLAUNCH_GRACE_PERIOD=3: %v, %v", c.Flags.GracePeriod, err)
	}
	var out, errb bytes.Buffer
	if rc := run([]string{"--grace-period", "2x", "train"}, &out, &errb); rc != 2 || !strings.Contains(errb.String(), `duration "2x": want seconds`) {
		t.Fatalf("bad duration: exit %d\n%s", rc, errb.String())
	}
}
