package tensor

// Embed computes y[b,t] = wte[token] + wpe[t].
func (c *CPU) Embed(y, wte, wpe *Tensor, tokens []int32) {
	if m := c.mix(y, wte, wpe); m != nil {
		defer m.done()
		y, wte, wpe = m.out(y), m.in(wte), m.in(wpe)
	}
	D, T := embedDims("embed", wte, wpe, y, tokens)
	n := len(tokens)
	parallelRange(n, rowGrain, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			tok := int(tokens[r])
			yr := y.Data[r*D : (r+1)*D]
			copy(yr, wte.Data[tok*D:(tok+1)*D])
			if wpe != nil {
				pos := wpe.Data[(r%T)*D : (r%T+1)*D]
				for j, v := range pos {
					yr[j] += v
				}
			}
		}
	})
}

// EmbedBackward scatter-adds dy into dwte and sums it per position into dwpe.
// Tasks own column blocks, and rows are added in order within each.
func (c *CPU) EmbedBackward(dwte, dwpe, dy *Tensor, tokens []int32) {
	mustF32("embed backward", []string{"dwte", "dwpe"}, dwte, dwpe)
	if m := c.mix(dy); m != nil {
		defer m.done()
		dy = m.in(dy)
	}
	D, T := embedDims("embed backward", dwte, dwpe, dy, tokens)
	clear(dwte.Data)
	if dwpe != nil {
		clear(dwpe.Data)
	}
	parallelRange(D, colGrain, func(lo, hi int) {
		for r, tok := range tokens {
			g := dy.Data[r*D+lo : r*D+hi]
			dst := dwte.Data[int(tok)*D+lo : int(tok)*D+hi]
			for j, v := range g {
				dst[j] += v
			}
			if dwpe != nil {
				pos := dwpe.Data[(r%T)*D+lo : (r%T)*D+hi]
				for j, v := range g {
					pos[j] += v
				}
			}
		}
	})
}
