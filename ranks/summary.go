package ranks

// Summary is what the end of a run reports, kept as running totals of rank
// 0's step records so that what rank 0 holds does not grow with the steps:
// the first and last loss, the latest validation loss, the means of the
// steady steps, and the last record (without its timeline) for the peaks.
type Summary struct {
	Steps     int // records added
	FirstLoss float64
	ValLoss   *float64 // the latest validation loss, if any
	// PeakDevice is each rank's most device memory held by tensors over
	// the steps (nil on the CPU).
	PeakDevice []int64
	Last       StepRecord // the latest record, its Timeline dropped
	first      stepSums   // of the first step
	steady     stepSums   // over every step but the first
}

type stepSums struct{ tokensPerS, stepS, bubbleMeasured, bubblePredicted float64 }

func (s *stepSums) add(r StepRecord) {
	s.tokensPerS += r.TokensPerS
	s.stepS += r.StepS
	s.bubbleMeasured += r.BubbleMeasured
	s.bubblePredicted += r.BubblePredicted
}

// Add counts one step's record in.
func (s *Summary) Add(r StepRecord) {
	r.Timeline = nil
	if s.Steps == 0 {
		s.FirstLoss = r.Loss
		s.first.add(r)
	} else {
		s.steady.add(r)
	}
	if r.ValLoss != nil {
		v := *r.ValLoss
		s.ValLoss = &v
	}
	for i, b := range r.PeakDevice {
		if s.PeakDevice == nil {
			s.PeakDevice = make([]int64, len(r.PeakDevice))
		}
		if i < len(s.PeakDevice) {
			s.PeakDevice[i] = max(s.PeakDevice[i], b)
		}
	}
	s.Last = r
	s.Steps++
}

// Steady returns the mean tokens/s, step time and measured and predicted
// bubble of the steps after the first, which pays for warm-up (allocation,
// connections); of the first alone when it is the only one.
func (s *Summary) Steady() (tokensPerS, stepS, bubbleMeasured, bubblePredicted float64) {
	if s.Steps == 0 {
		return 0, 0, 0, 0
	}
	sums, n := s.steady, float64(s.Steps-1)
	if s.Steps == 1 {
		sums, n = s.first, 1
	}
	return sums.tokensPerS / n, sums.stepS / n, sums.bubbleMeasured / n, sums.bubblePredicted / n
}
