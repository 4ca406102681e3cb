package tensor

// Backend is the set of operations a GPT needs, fused where fusing saves a pass
// over memory. Outputs are overwritten, never accumulated into, unless a method
// says otherwise. Every implementation must give results that do not depend on
// how many threads it runs: work is split only over independent outputs.
//
// Shapes use B (batch), T (sequence), D (width), H (heads), N = B·T (tokens) and
// V (vocabulary). Linear weights are [out, in], as in PyTorch.
//
// Dtypes (mixed precision, as PyTorch's autocast to bfloat16). Parameters,
// their gradients, optimizer state and master weights are Float32 in every
// precision, and so are statistics (LayerNorm's mean and rstd), losses and
// norms. Activations and activation gradients may be either dtype; in bf16
// training every one is BFloat16. Every operation reads each input at its
// dtype as float32 values, computes in float32 (sums in float32 or float64
// in a fixed order, the same as for float32 tensors), and writes each
// output rounded once, to nearest even, to that output's dtype. Matrix
// products (MatMul, Linear, LinearBackwardInput, LinearBackwardWeight):
// where either operand is BFloat16, both are read rounded to bfloat16 (a
// float32 weight is rounded; a bfloat16 copy of the weights refreshed after
// each optimizer step may stand in for it, having the same bits), the
// products accumulate in float32, the bias and residual are added in
// float32 and the output is rounded once; weight and bias gradients are
// Float32. CrossEntropy reads bfloat16 logits and may write bfloat16
// probabilities; its loss is float64. Scale, SumSquares and the optimizers
// take Float32 tensors only. A dtype an operation does not allow is a panic
// naming the operation, the tensor and its dtype.
type Backend interface {
	// Name says what runs the matrix products, e.g. "cpu/openblas".
	Name() string
	Memory
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
	// GeluExact is the exact GELU, y = x·Φ(x) with Φ(x) = (1+erf(x/√2))/2
	// (PyTorch's nn.GELU()); cdf keeps Φ(x).
	GeluExact(y, cdf, x *Tensor)
	// GeluExactBackward computes dx = dy·(Φ(x) + x·φ(x)) from the saved cdf
	// (dx may alias dy).
	GeluExactBackward(dx, dy, x, cdf *Tensor)
	// Attention is causal multi-head self-attention scaled by 1/√(D/H): qkv [B,T,3D]
	// holds q, k, v side by side (head h at columns h·D/H within each), out is [B,T,D]
	// and probs [B,H,T,T] keeps the softmax for the backward pass.
	Attention(out, probs, qkv *Tensor, heads int)
	// AttentionBackward computes dqkv [B,T,3D] from dout [B,T,D].
	AttentionBackward(dqkv, dout, qkv, probs *Tensor, heads int)
	// FlashAttention is Attention fused (flash-attention-2): tiles of queries
	// against tiles of keys and values with an online softmax, no T×T matrix
	// held anywhere, key tiles above the causal diagonal skipped. It keeps
	// lse [B,H,T] (float32): each row's log Σ_j exp(q·k_j/√hd), all the
	// backward needs besides out. qkv and out may be float32 or bfloat16.
	// Sums run in a fixed order: the same inputs give the same bits. The CPU
	// takes any head width, the CUDA backend FlashMinHead..FlashMaxHead.
	FlashAttention(out, lse, qkv *Tensor, heads int)
	// FlashAttentionBackward computes dqkv [B,T,3D] from dout [B,T,D] and
	// FlashAttention's out and lse, recomputing the probabilities tile by
	// tile; dQ, dK and dV are each summed in a fixed order (no atomics).
	FlashAttentionBackward(dqkv, dout, qkv, out, lse *Tensor, heads int)
	// FusedAttention says whether a model with this head width and sequence
	// length should use FlashAttention rather than Attention on this
	// backend: where the fused kernel exists for the width and pays.
	FusedAttention(headDim, seq int) bool
	// Embed computes y[b,t] = wte[tokens[b,t]] + wpe[t]: y [B,T,D]; wpe may be nil.
	Embed(y, wte, wpe *Tensor, tokens []int32)
	// EmbedBackward scatter-adds dy into dwte (and sums it per position into dwpe,
	// which may be nil); both are overwritten.
	EmbedBackward(dwte, dwpe, dy *Tensor, tokens []int32)
	// CrossEntropy turns logits [N,V] into probabilities (probs may alias logits)
	// and returns the mean over rows of -log p[target]. Only the first valid
	// columns are the vocabulary (0: all V); the others are padding, masked to
	// -inf: their probability is 0, so CrossEntropyBackward gives them no
	// gradient. Targets must be below valid.
	CrossEntropy(probs, logits *Tensor, targets []int32, valid int) float64
	// CrossEntropyBackward computes dlogits = scale·(p - onehot(target))/N.
	CrossEntropyBackward(dlogits, probs *Tensor, targets []int32, scale float32)
	// Add computes y = a + b elementwise (y may alias a or b).
	Add(y, a, b *Tensor)
}

// Memory is the part of a Backend that owns tensor storage: allocation, the
// explicit copies between host and backend, and the whole-tensor updates the
// training loop needs (optimizers, scaling, Σx²), so that code above a backend
// never touches values except through it. Tensors passed to a backend must
// have been made by it (or, for the CPU backend, be host tensors).
type Memory interface {
	// Alloc returns a float32 tensor of the shape whose contents are undefined.
	Alloc(shape ...int) *Tensor
	// AllocAs returns a tensor of the dtype and shape whose contents are undefined.
	AllocAs(dt DType, shape ...int) *Tensor
	// Zeros returns a zeroed tensor of the shape.
	Zeros(shape ...int) *Tensor
	// Free gives t's storage back to the backend for reuse; neither t nor any
	// view of it may be used afterwards. Views themselves are not freed.
	Free(t *Tensor)
	// Upload copies len(src) = t.Len() host values into t, rounded to
	// nearest even where t is bfloat16.
	Upload(t *Tensor, src []float32)
	// Download copies t's t.Len() = len(dst) values to the host (exactly:
	// every bfloat16 is a float32).
	Download(dst []float32, t *Tensor)
	// Copy sets dst = src (the same number of elements; shapes may differ),
	// converting to dst's dtype where a backend supports it.
	Copy(dst, src *Tensor)
	// Scale multiplies t by s in place.
	Scale(t *Tensor, s float32)
	// SumSquares is Σ x² accumulated in float64 in an order fixed by the
	// length alone, so the same tensor gives the same bits every time.
	SumSquares(t *Tensor) float64
	// SumSquaresAll is SumSquares of each tensor (the same bits), in one
	// pass over all of them where the backend can (one launch and one
	// download on a GPU instead of one of each per tensor).
	SumSquaresAll(ts []*Tensor) []float64
	// AdamW applies one torch.optim.AdamW update (float32 arithmetic) to w
	// from gradient g, updating the moments m and v in place.
	AdamW(w, g, m, v *Tensor, h AdamWStep)
	// AdamWAll applies each update as AdamW would (the same bits), in one
	// pass over all of them where the backend can.
	AdamWAll(us []AdamWUpdate)
	// SGD applies one SGD-with-momentum update (float64 arithmetic per
	// element) to w from g, keeping the momentum in buf.
	SGD(w, g, buf *Tensor, h SGDStep)

	// Sync waits until every operation queued so far has finished (a GPU
	// queues its work; the CPU returns at once), so a clock read after it
	// counts that work.
	Sync() error
	// DeviceMemory is the device memory the backend's tensors hold; ok is
	// false where they live in host memory.
	DeviceMemory() (s MemoryStats, ok bool)
	// ResetPeakMemory starts DeviceMemory's peak over from the bytes in use
	// now (nothing where there is no device memory).
	ResetPeakMemory()
	// Device is the backend's GPU for a communicator that moves device
	// memory, nil where tensors live in host memory.
	Device() Device
	// HostStaging is the backend's pinned host buffers for a communicator
	// of host memory (TCP), nil where tensors live in host memory (the
	// communicator then reads and writes their Data directly).
	HostStaging() PinnedStaging
}

// AdamWStep is one AdamW update's scalars, already rounded to float32 in the
// order torch computes them: per element, g' = g·GradScale, m = β1·m + (1-β1)·g',
// v = β2·v + (1-β2)·g'², w = w·Decay - Step·m/(√v·InvBC2 + Eps).
type AdamWStep struct {
	Beta1, Beta2, GradScale, Decay, Step, InvBC2, Eps float32
}

// AdamWUpdate is one tensor's AdamW update for AdamWAll.
type AdamWUpdate struct {
	W, G, M, V *Tensor
	H          AdamWStep
}

// SGDStep is one SGD update's scalars: per element, in float64,
// g' = g·GradScale + WeightDecay·w (+ Momentum·buf unless Fresh), buf = g',
// w = w - LR·g'.
type SGDStep struct {
	GradScale, WeightDecay, Momentum, LR float64
	Fresh                                bool // the first step: buf holds nothing yet
}
