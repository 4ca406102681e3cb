package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// attnRef is float64 causal attention for one (batch, head): probabilities
// P[i][j] (j ≤ i) and, given dO, the gradients for q, k and v.
type attnRef struct{ p, dq, dk, dv [][]float64 }

func refAttention(qkv, dout *Tensor, b, h, T, D, hd int) attnRef {
	at := func(row, col int) float64 { return float64(qkv.Data[(b*T+row)*3*D+col]) }
	scale := 1 / math.Sqrt(float64(hd))
	mat := func(n, m int) [][]float64 {
		x := make([][]float64, n)
		for i := range x {
			x[i] = make([]float64, m)
		}
		return x
	}
	r := attnRef{p: mat(T, T), dq: mat(T, hd), dk: mat(T, hd), dv: mat(T, hd)}
	for i := range T {
		mx := math.Inf(-1)
		for j := 0; j <= i; j++ {
			for c := range hd {
				r.p[i][j] += at(i, h*hd+c) * at(j, D+h*hd+c)
			}
			r.p[i][j] *= scale
			mx = math.Max(mx, r.p[i][j])
		}
		var z float64
		for j := 0; j <= i; j++ {
			r.p[i][j] = math.Exp(r.p[i][j] - mx)
			z += r.p[i][j]
		}
		for j := 0; j <= i; j++ {
			r.p[i][j] /= z
		}
	}
	if dout == nil {
		return r
	}
	do := func(i, c int) float64 { return float64(dout.Data[(b*T+i)*D+h*hd+c]) }
	for i := range T {
		dp := make([]float64, i+1)
		var s float64
		for j := 0; j <= i; j++ {
			for c := range hd {
				dp[j] += do(i, c) * at(j, 2*D+h*hd+c)
				r.dv[j][c] += r.p[i][j] * do(i, c)
			}
			s += dp[j] * r.p[i][j]
		}
		for j := 0; j <= i; j++ {
			ds := r.p[i][j] * (dp[j] - s) * scale
			for c := range hd {
				r.dq[i][c] += ds * at(j, D+h*hd+c)
				r.dk[j][c] += ds * at(i, h*hd+c)
			}
		}
	}
	return r
}

// TestAttentionAgainstReference covers one block of positions (T=5) and
// several, the last partial (T=70), forward and backward.
func TestAttentionAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, T := range []int{5, 70} {
		B, H, hd := 2, 3, 4
		D := H * hd
		qkv, dout := randTensor(r, B, T, 3*D), randTensor(r, B, T, D)
		for _, be := range backends(t) {
			out, probs, dqkv := New(B, T, D), New(B, H, T, T), New(B, T, 3*D)
			be.Attention(out, probs, qkv, H)
			be.AttentionBackward(dqkv, dout, qkv, probs, H)
			want, wantD := make([]float32, B*T*D), make([]float32, B*T*3*D)
			for b := range B {
				for h := range H {
					ref := refAttention(qkv, dout, b, h, T, D, hd)
					for i := range T {
						for c := range hd {
							var o float64
							for j := 0; j <= i; j++ {
								o += ref.p[i][j] * float64(qkv.Data[(b*T+j)*3*D+2*D+h*hd+c])
							}
							want[(b*T+i)*D+h*hd+c] = float32(o)
							row := (b*T + i) * 3 * D
							wantD[row+h*hd+c] = float32(ref.dq[i][c])
							wantD[row+D+h*hd+c] = float32(ref.dk[i][c])
							wantD[row+2*D+h*hd+c] = float32(ref.dv[i][c])
						}
					}
				}
			}
			// float32 softmax (exp32 within 4e-7) and sums of up to 70 terms
			// against float64; the backward chains three such products, so
			// its bound is ten times looser.
			closeTo(t, fmt.Sprintf("%s attention T=%d", be.Name(), T), out.Data, want, 1e-5)
			closeTo(t, fmt.Sprintf("%s attention backward T=%d", be.Name(), T), dqkv.Data, wantD, 1e-4)
		}
	}
}
