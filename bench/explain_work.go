package bench

import "github.com/pplaunch/pplaunch/models"

// work is a kernel family's FLOPs and HBM bytes per step.
type work struct {
	family       string
	flops, bytes float64
}

// shape is what the per-family counts need of a step: N = B·T tokens, the
// widths, the padded vocabulary, the bytes of an activation (act), of a
// weight as the products read it (wt) and of a float32 (4).
type shape struct {
	B, T, N, L, D, H, hd, V, P float64
	act, wt                    float64
}

func stepShape(cfg models.Config, batch int, precision string) shape {
	s := shape{B: float64(batch), T: float64(cfg.Seq), L: float64(cfg.Layers), D: float64(cfg.Width),
		H: float64(cfg.Heads), V: float64(cfg.PaddedVocab()), P: float64(cfg.NumParams()), act: 4, wt: 4}
	s.N, s.hd = s.B*s.T, s.D/s.H
	if precision == "bf16" {
		s.act, s.wt = 2, 2 // bf16 activations and bf16 copies of the weights for the products
	}
	return s
}

// gemms: per block the four linears (D→3D, D→D, D→4D, 4D→D) and the head
// (D→V), each forward, input gradient and weight gradient (2·N·in·out FLOPs
// each). Bytes: forward reads x, W, bias (and the residual for the two
// projections) and writes y; the input gradient reads dy, W, writes dx; the
// weight gradient reads dy, x and writes dW and dbias in float32.
func (s shape) gemms() work {
	w := work{family: "GEMMs (linears, head)"}
	lin := func(count, in, out float64, residual bool) {
		w.flops += count * 6 * s.N * in * out
		fwd := s.N*in*s.act + in*out*s.wt + out*4 + s.N*out*s.act
		if residual {
			fwd += s.N * out * s.act
		}
		bin := s.N*out*s.act + in*out*s.wt + s.N*in*s.act
		bw := s.N*out*s.act + s.N*in*s.act + (in*out+out)*4
		w.bytes += count * (fwd + bin + bw)
	}
	lin(s.L, s.D, 3*s.D, false)
	lin(s.L, s.D, s.D, true)
	lin(s.L, s.D, 4*s.D, false)
	lin(s.L, 4*s.D, s.D, true)
	lin(1, s.D, s.V, false)
	return w
}

// attention: fused, the causal pairs T(T+1)/2 per head: the forward's two
// products (S = QKᵀ, PV), the backward's seven (S and dP recomputed in both
// of its passes, dV, dK, dQ); bytes are the compulsory traffic (q, k, v, out,
// dout, dqkv once, lse and the row dots), key and value tiles re-read from
// L2. Unfused, the full T×T square in six products, and the probabilities
// written, read and rewritten through global memory (44 bytes per score).
func (s shape) attention(fused bool) work {
	w := work{family: "attention"}
	heads := s.L * s.B * s.H // every block's
	stats, nd := heads*s.T*4, s.L*s.N*s.D*s.act
	if fused {
		pairs := s.T * (s.T + 1) / 2
		w.flops = heads * pairs * s.hd * 2 * (2 + 7)
		fwd := 3*nd + nd + stats
		rowdot := 2*nd + stats
		dkv := 4*nd + 2*stats + 2*nd
		dq := 4*nd + 2*stats + nd
		w.bytes = fwd + rowdot + dkv + dq
		return w
	}
	w.flops = heads * s.T * s.T * s.hd * 2 * 6
	w.bytes = heads*s.T*s.T*44 + 2*3*nd + 3*nd
	return w
}

// layerNorm: 2L+1 of them over N×D. Forward reads x, writes y, mean and
// rstd; the input gradient reads dy, x, mean, rstd and writes dx; the weight
// gradient reads dy and x. About 20 FLOPs per element in all.
func (s shape) layerNorm() work {
	n := (2*s.L + 1) * s.N * s.D
	rows := (2*s.L + 1) * s.N * 2 * 4
	return work{family: "LayerNorm", flops: 20 * n, bytes: n*s.act*(2+3+2) + 2*rows}
}

// gelu: over N×4D per block; forward reads x and writes y and the saved
// tanh, backward reads dy, x, tanh and writes dx. About 30 FLOPs per element.
func (s shape) gelu() work {
	n := s.L * s.N * 4 * s.D
	return work{family: "GELU", flops: 30 * n, bytes: n * s.act * (3 + 4)}
}

// crossEntropy: softmax and loss over N×V logits, in place, then dlogits:
// each pass reads and writes the logits once. About 7 FLOPs per logit.
func (s shape) crossEntropy() work {
	n := s.N * s.V
	return work{family: "softmax / cross-entropy", flops: 7 * n, bytes: 4 * n * s.act}
}

// residual: the backward's dx += dy for every residual (2 per block).
func (s shape) residual() work {
	n := 2 * s.L * s.N * s.D
	return work{family: "residual adds", flops: n, bytes: 3 * n * s.act}
}

// adamW: per parameter, reads w, g, m, v and writes w, m, v in float32 (and
// a bf16 copy of w in bf16), about 12 FLOPs; Σg² for the clip reads g.
func (s shape) adamW() work {
	per := 7*4.0 + 4
	if s.wt == 2 {
		per += 2
	}
	return work{family: "AdamW and Σg²", flops: 14 * s.P, bytes: per * s.P}
}

// embedding: the forward reads a token row and a position row per token
// and writes the activation; the backward reads dy and writes all of dwte
// (every row, used or not) and dwpe.
func (s shape) embedding() work {
	return work{family: "embedding", flops: 2 * s.N * s.D,
		bytes: s.N*s.D*(4+4+s.act) + s.N*s.D*s.act + (s.V+s.T)*s.D*4}
}
