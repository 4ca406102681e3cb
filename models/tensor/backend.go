package tensor

// Backend is the set of operations a GPT needs, fused where fusing saves a pass
// over memory. Outputs are overwritten, never accumulated into, unless a method
// says otherwise. Every implementation must give results that do not depend on
// how many threads it runs: work is split only over independent outputs.
//
// Shapes use B (batch), T (sequence), D (width), H (heads), N = B·T (tokens) and
// V (vocabulary). Linear weights are [out, in], as in PyTorch.
type Backend interface {
	// Name says what runs the matrix products, e.g. "cpu/openblas".
	Name() string
	// MatMul computes c = alpha·op(a)·op(b) + beta·c on matrices (leading
	// dimensions flattened), where op transposes when ta or tb is set.
	MatMul(c, a *Tensor, ta bool, b *Tensor, tb bool, alpha, beta float32)
	// Linear computes y = x·wᵀ + bias (+ residual): x [N,in], w [out,in], y [N,out];
	// bias [out] and residual [N,out] may be nil.
	Linear(y, x, w, bias, residual *Tensor)
	// LinearBackwardInput computes dx = dy·w.
	LinearBackwardInput(dx, dy, w *Tensor)
	// LinearBackwardWeight computes dw = dyᵀ·x and dbias = Σ_rows dy (dbias may be nil).
	LinearBackwardWeight(dw, dbias, dy, x *Tensor)
	// LayerNorm normalises each row of x: y = (x-μ)/σ·gamma + beta, σ = √(var+eps),
	// keeping μ and 1/σ per row in mean and rstd [N].
	LayerNorm(y, mean, rstd, x, gamma, beta *Tensor, eps float32)
	// LayerNormBackwardInput computes dx from dy and the saved statistics.
	LayerNormBackwardInput(dx, dy, x, mean, rstd, gamma *Tensor)
	// LayerNormBackwardWeight computes dgamma = Σ_rows dy·x̂ and dbeta = Σ_rows dy.
	LayerNormBackwardWeight(dgamma, dbeta, dy, x, mean, rstd *Tensor)
	// Gelu is GELU with the tanh approximation; th keeps tanh(√(2/π)(x+0.044715x³)).
	Gelu(y, th, x *Tensor)
	// GeluBackward computes dx from dy, x and the saved th.
	GeluBackward(dx, dy, x, th *Tensor)
	// Attention is causal multi-head self-attention scaled by 1/√(D/H): qkv [B,T,3D]
	// holds q, k, v side by side (head h at columns h·D/H within each), out is [B,T,D]
	// and probs [B,H,T,T] keeps the softmax for the backward pass.
	Attention(out, probs, qkv *Tensor, heads int)
	// AttentionBackward computes dqkv [B,T,3D] from dout [B,T,D].
	AttentionBackward(dqkv, dout, qkv, probs *Tensor, heads int)
	// Embed computes y[b,t] = wte[tokens[b,t]] + wpe[t]: y [B,T,D]; wpe may be nil.
	Embed(y, wte, wpe *Tensor, tokens []int32)
	// EmbedBackward scatter-adds dy into dwte (and sums it per position into dwpe,
	// which may be nil); both are overwritten.
	EmbedBackward(dwte, dwpe, dy *Tensor, tokens []int32)
	// CrossEntropy turns logits [N,V] into probabilities (probs may alias logits)
	// and returns the mean over rows of -log p[target].
	CrossEntropy(probs, logits *Tensor, targets []int32) float64
	// CrossEntropyBackward computes dlogits = scale·(p - onehot(target))/N.
	CrossEntropyBackward(dlogits, probs *Tensor, targets []int32, scale float32)
	// Add computes y = a + b elementwise (y may alias a or b).
	Add(y, a, b *Tensor)
}
