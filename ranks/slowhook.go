package ranks

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/tensor"
)

// SlowEnv is the test-only hook PPLAUNCH_TEST_SLOW=RANK:MS[:add], read
// only inside a rank of pplaunch train: that rank takes MS milliseconds more
// in every block's forward pass of every micro-batch, inside the block's
// measured time, as a slower device would. By default it burns that CPU
// time, so the step really is slower (the benchmarks' form); with ":add" it
// only counts it in the measured time, so that what the rebalancing decides
// does not depend on how busy the machine is (the tests' form). Whichever
// blocks the rank holds are slow; rebalancing moves blocks off it.
const SlowEnv = "PPLAUNCH_TEST_SLOW"

// SlowFunc is Job.Slow's type: run inside a block's pass, it returns the time
// to count in the pass beyond what it took.
type SlowFunc = func(unit int, pass models.Pass, d time.Duration) time.Duration

// SlowHookFromEnv reads PPLAUNCH_TEST_SLOW for this rank (see SlowHook).
func SlowHookFromEnv(getenv func(string) string, rank int) (SlowFunc, error) {
	return SlowHook(getenv(SlowEnv), rank)
}

// SlowHook parses PPLAUNCH_TEST_SLOW's value into Job.Slow for this rank:
// nil when it is empty or names another rank.
func SlowHook(spec string, rank int) (SlowFunc, error) {
	if spec == "" {
		return nil, nil
	}
	parts := strings.Split(spec, ":")
	bad := fmt.Errorf("%s=%q: want RANK:MS or RANK:MS:add, the rank and the milliseconds it takes more per block and micro-batch, burnt (e.g. 1:20) or only counted in the measured time (1:20:add)", SlowEnv, spec)
	if len(parts) < 2 || len(parts) > 3 || (len(parts) == 3 && parts[2] != "add") {
		return nil, bad
	}
	who, err1 := strconv.Atoi(parts[0])
	n, err2 := strconv.ParseFloat(parts[1], 64)
	if err1 != nil || err2 != nil || who < 0 || !(n > 0) || n > 60_000 {
		return nil, bad
	}
	if who != rank {
		return nil, nil
	}
	// A block is two sublayers (attention, then the MLP), each a call.
	half, add := time.Duration(n*float64(time.Millisecond)/2), len(parts) == 3
	return func(_ int, pass models.Pass, _ time.Duration) time.Duration {
		switch {
		case pass != models.PassF:
			return 0
		case add:
			return half
		}
		burn(half)
		return 0
	}, nil
}

// burn keeps the CPU busy for d: time a slower device would compute.
// (a spin on the clock: no sleep, which would free the CPU for the others).
func burn(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// timing is the stages' Timing hook: prof's and the rebalancing meter's,
// with Job.Slow run inside a block's measured time; nil when nothing
// measures or slows (the stages then read no clock). For the meter
// on a backend that queues its work, each pass's time also counts the wait
// for the device to finish it: with the device idle when the next pass is
// queued, that is the device's time for the pass, not the host's to queue
// it (at the cost of the overlap between the two while rebalancing is on).
func (j *rankJob) timing(prof *profiler, meter *recutMeter) models.Timing {
	slow := j.job.Slow
	if slow == nil && prof == nil && meter == nil {
		return nil
	}
	var dev tensor.Backend // a backend that queues its work (a GPU), for the meter
	if meter != nil && j.job.Compute.Device() != nil {
		dev = j.job.Compute
	}
	L := j.cfg.Model.Layers
	return func(unit int, pass models.Pass, d time.Duration, saved int64) {
		if dev != nil {
			t0 := time.Now()
			_ = dev.Sync() // a failed device fails the step's next call, which reports it
			d += time.Since(t0)
		}
		if slow != nil && unit >= 0 && unit < L {
			t0 := time.Now()
			extra := slow(unit, pass, d)
			d += time.Since(t0) + extra
		}
		if prof != nil {
			prof.hook(unit, pass, d, saved)
		}
		if meter != nil {
			meter.hook(unit, pass, d, saved)
		}
	}
}
