package tensor

import "math"

// CrossEntropy computes the softmax of each row over its first valid columns
// (0: all) and the mean negative log-likelihood; the padding columns get
// probability 0, as if their logits were -inf.
func (c *CPU) CrossEntropy(probs, logits *Tensor, targets []int32, valid int) float64 {
	if m := c.mix(probs, logits); m != nil {
		defer m.done()
		logits = m.in(logits)
		probs = m.out(probs)
	}
	n, V, valid := crossEntropyDims(probs, logits, targets, valid)
	losses := make([]float64, n)
	parallelRange(n, rowGrain, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			lr, pr := logits.Data[r*V:r*V+valid], probs.Data[r*V:(r+1)*V]
			tg := int(targets[r])
			mx := lr[0]
			for _, v := range lr {
				if v > mx {
					mx = v
				}
			}
			zt := lr[tg] - mx
			// The denominator in float64, in column order: added in float32,
			// 50257 terms lose about 1e-6 of the loss.
			expShifted(pr[:valid], lr, mx)
			var sum float64
			for _, e := range pr[:valid] {
				sum += float64(e)
			}
			inv := float32(1 / sum)
			for j := range pr[:valid] {
				pr[j] *= inv
			}
			clear(pr[valid:])
			losses[r] = math.Log(sum) - float64(zt)
		}
	})
	var total float64
	for _, l := range losses {
		total += l
	}
	return total / float64(n)
}

// CrossEntropyBackward computes dlogits = scale·(p - onehot)/N.
func (c *CPU) CrossEntropyBackward(dlogits, probs *Tensor, targets []int32, scale float32) {
	if m := c.mix(dlogits, probs); m != nil {
		defer m.done()
		probs = m.in(probs)
		dlogits = m.out(dlogits)
	}
	n, V := crossEntropyBackwardDims(dlogits, probs, targets)
	s := scale / float32(n)
	parallelRange(n, rowGrain, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			pr, dr := probs.Data[r*V:(r+1)*V], dlogits.Data[r*V:(r+1)*V]
			for j, p := range pr {
				dr[j] = p * s
			}
			dr[targets[r]] -= s
		}
	})
}
