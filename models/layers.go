package models

import (
	"github.com/pplaunch/pplaunch/models/tensor"
)

// flow is what passes from sublayer to sublayer inside a stage during forward.
type flow struct {
	x       *tensor.Tensor // activation [B,T,D]
	tokens  []int32        // read by the embedding
	targets []int32        // read by the head
	loss    float64        // set by the head
	al      *alloc         // where the micro-batch's buffers come from
}

// sublayer is one piece of a unit with an explicit forward and a backward split
// into an input part and a weight part. Every sublayer writes each of its
// parameters' gradients exactly once per micro-batch (overwriting), so the
// per-micro-batch buffer needs no clearing.
type sublayer interface {
	params() []*Param
	// forward reads and replaces f.x (or f.tokens, f.targets) and returns the
	// tape of what backward needs.
	forward(be tensor.Backend, f *flow) tape
}

// tape is one sublayer's saved state for one micro-batch.
type tape interface {
	// backwardInput returns the gradient for the sublayer's input and keeps only
	// what backwardWeight needs. scale seeds the head's loss gradient.
	backwardInput(be tensor.Backend, al *alloc, dy *tensor.Tensor, scale float32) *tensor.Tensor
	// backwardWeight writes the parameter gradients into g.
	backwardWeight(be tensor.Backend, g grads)
	// bytes counts the activations held now.
	bytes() int64
}

// grads is one flat gradient buffer laid out like the stage's parameters.
type grads interface {
	// of views p's gradient in the buffer.
	of(p *Param) *tensor.Tensor
}

// gradTensor is a flat gradient tensor of the stage's backend.
type gradTensor struct{ t *tensor.Tensor }

func (g gradTensor) of(p *Param) *tensor.Tensor { return g.t.View(p.off, p.Shape...) }

// gradBuf is a flat gradient buffer in host memory (for host tensors).
type gradBuf []float32

func (g gradBuf) of(p *Param) *tensor.Tensor {
	t, _ := tensor.From(g, len(g))
	return t.View(p.off, p.Shape...)
}

func sizeOf(ts ...*tensor.Tensor) int64 {
	var n int64
	for _, t := range ts {
		if t != nil {
			n += t.Bytes()
		}
	}
	return n
}

// linear is a fully connected layer with bias; w is [out, in].
type linear struct{ w, b *Param }

// layerNorm is LayerNorm over the last dimension with gain and bias.
type layerNorm struct{ g, b *Param }

type lnTape struct{ x, mean, rstd, dy *tensor.Tensor }

func (l layerNorm) forward(be tensor.Backend, al *alloc, x *tensor.Tensor) (*tensor.Tensor, *lnTape) {
	n, _ := x.Rows()
	y, mean, rstd := al.like(x), al.stat(n), al.stat(n)
	be.LayerNorm(y, mean, rstd, x, l.g.Value, l.b.Value, LayerNormEps)
	return y, &lnTape{x: x, mean: mean, rstd: rstd}
}

func (l layerNorm) backwardInput(be tensor.Backend, al *alloc, t *lnTape, dy *tensor.Tensor) *tensor.Tensor {
	dx := al.like(t.x)
	be.LayerNormBackwardInput(dx, dy, t.x, t.mean, t.rstd, l.g.Value)
	t.dy = dy
	return dx
}

func (l layerNorm) backwardWeight(be tensor.Backend, t *lnTape, g grads) {
	be.LayerNormBackwardWeight(g.of(l.g), g.of(l.b), t.dy, t.x, t.mean, t.rstd)
}

func (t *lnTape) bytes() int64 { return sizeOf(t.x, t.mean, t.rstd, t.dy) }

// residual is a pre-LayerNorm half-block, x + out(mid(in(ln(x)))): GPT-2's
// attention half (mid is causal attention, in c_attn, out c_proj), its MLP half
// (mid is GELU, in c_fc, out c_proj), and the whole block of the MLP model.
type residual struct {
	ln      layerNorm
	in, out linear
	mid     midOp
}

// midOp is the parameter-free middle of a residual half-block.
type midOp interface {
	// forward computes y from h and returns it with the state backward needs.
	forward(be tensor.Backend, al *alloc, h *tensor.Tensor) (y, saved *tensor.Tensor)
	// backward computes dh from dy (which it may overwrite), h, its output
	// y and saved.
	backward(be tensor.Backend, al *alloc, h, y, saved, dy *tensor.Tensor) *tensor.Tensor
}

// gelu is GELU with the tanh approximation, saving the tanh, or the exact
// (erf) GELU, saving Φ(x).
type gelu struct{ exact bool }

func (g gelu) forward(be tensor.Backend, al *alloc, f *tensor.Tensor) (y, saved *tensor.Tensor) {
	s, out := al.like(f), al.like(f)
	if g.exact {
		be.GeluExact(out, s, f)
	} else {
		be.Gelu(out, s, f)
	}
	return out, s
}

func (g gelu) backward(be tensor.Backend, _ *alloc, f, _, s, dg *tensor.Tensor) *tensor.Tensor {
	// In place: dg is not needed after.
	if g.exact {
		be.GeluExactBackward(dg, dg, f, s)
	} else {
		be.GeluBackward(dg, dg, f, s)
	}
	return dg
}

// attention is causal multi-head self-attention over h = q|k|v [B,T,3D]:
// fused where the backend says so for the head width and length, saving each
// row's logsumexp [B,H,T] (the output, kept anyway, is the rest of what its
// backward needs); else unfused, saving the probabilities [B,H,T,T].
type attention struct{ heads int }

func (a attention) forward(be tensor.Backend, al *alloc, qkv *tensor.Tensor) (y, saved *tensor.Tensor) {
	B, T, D := qkv.Shape[0], qkv.Shape[1], qkv.Shape[2]/3
	att := al.new(B, T, D)
	if be.FusedAttention(D/a.heads, T) {
		lse := al.stat(B, a.heads, T) // statistics stay float32 in every precision
		be.FlashAttention(att, lse, qkv, a.heads)
		return att, lse
	}
	probs := al.new(B, a.heads, T, T)
	be.Attention(att, probs, qkv, a.heads)
	return att, probs
}

func (a attention) backward(be tensor.Backend, al *alloc, qkv, att, saved, datt *tensor.Tensor) *tensor.Tensor {
	dqkv := al.like(qkv)
	if len(saved.Shape) == 3 { // the fused forward's lse
		be.FlashAttentionBackward(dqkv, datt, qkv, att, saved, a.heads)
	} else {
		be.AttentionBackward(dqkv, datt, qkv, saved, a.heads)
	}
	return dqkv
}

type residualTape struct {
	r              *residual
	ln             *lnTape
	a, h, saved, y *tensor.Tensor // ln output, in's output, what mid saved, mid's output
	dh, dy         *tensor.Tensor // kept for the weight gradients
}

func (r *residual) params() []*Param {
	return []*Param{r.ln.g, r.ln.b, r.in.w, r.in.b, r.out.w, r.out.b}
}

func (r *residual) forward(be tensor.Backend, fl *flow) tape {
	x := fl.x
	a, lt := r.ln.forward(be, fl.al, x)
	hshape := append(x.Shape[:len(x.Shape)-1:len(x.Shape)-1], r.in.w.Shape[0])
	h := fl.al.new(hshape...)
	be.Linear(h, a, r.in.w.Value, r.in.b.Value, nil)
	y, saved := r.mid.forward(be, fl.al, h)
	out := fl.al.like(x)
	be.Linear(out, y, r.out.w.Value, r.out.b.Value, x)
	fl.x = out
	return &residualTape{r: r, ln: lt, a: a, h: h, saved: saved, y: y}
}

func (t *residualTape) backwardInput(be tensor.Backend, al *alloc, dy *tensor.Tensor, _ float32) *tensor.Tensor {
	r := t.r
	dmid := al.like(t.y)
	be.LinearBackwardInput(dmid, dy, r.out.w.Value)
	dh := r.mid.backward(be, al, t.h, t.y, t.saved, dmid)
	da := al.like(t.a)
	be.LinearBackwardInput(da, dh, r.in.w.Value)
	dx := r.ln.backwardInput(be, al, t.ln, da)
	be.Add(dx, dx, dy)
	t.dh, t.dy = dh, dy
	t.h, t.saved = nil, nil
	return dx
}

func (t *residualTape) backwardWeight(be tensor.Backend, g grads) {
	r := t.r
	be.LinearBackwardWeight(g.of(r.out.w), g.of(r.out.b), t.dy, t.y)
	be.LinearBackwardWeight(g.of(r.in.w), g.of(r.in.b), t.dh, t.a)
	r.ln.backwardWeight(be, t.ln, g)
}

func (t *residualTape) bytes() int64 {
	return t.ln.bytes() + sizeOf(t.a, t.h, t.saved, t.y, t.dh, t.dy)
}

// embedding turns token ids into vectors: wte[token] (+ wpe[position] for GPT).
type embedding struct {
	wte, wpe *Param // wpe is nil in the MLP model
	seq      int
}

type embedTape struct {
	e      *embedding
	tokens []int32
	dy     *tensor.Tensor
}

func (e *embedding) params() []*Param {
	if e.wpe == nil {
		return []*Param{e.wte}
	}
	return []*Param{e.wte, e.wpe}
}

func (e *embedding) forward(be tensor.Backend, fl *flow) tape {
	D := e.wte.Shape[1]
	y := fl.al.new(len(fl.tokens)/e.seq, e.seq, D)
	var wpe *tensor.Tensor
	if e.wpe != nil {
		wpe = e.wpe.Value
	}
	be.Embed(y, e.wte.Value, wpe, fl.tokens)
	fl.x = y
	return &embedTape{e: e, tokens: fl.tokens}
}

// backwardInput has no input gradient to give (token ids are not differentiable).
func (t *embedTape) backwardInput(_ tensor.Backend, _ *alloc, dy *tensor.Tensor, _ float32) *tensor.Tensor {
	t.dy = dy
	return nil
}

func (t *embedTape) backwardWeight(be tensor.Backend, g grads) {
	var dwpe *tensor.Tensor
	if t.e.wpe != nil {
		dwpe = g.of(t.e.wpe)
	}
	be.EmbedBackward(g.of(t.e.wte), dwpe, t.dy, t.tokens)
}

func (t *embedTape) bytes() int64 { return int64(len(t.tokens))*4 + sizeOf(t.dy) }

// head is the final LayerNorm, the LM head (no bias) and the cross-entropy
// loss over the first vocab of its rows (the others are padding: masked).
type head struct {
	ln    layerNorm
	w     *Param // [padded V, D]; a copy of the token embedding when tied
	vocab int
}

type headTape struct {
	h                *head
	ln               *lnTape
	z, probs, dlogit *tensor.Tensor
	targets          []int32
}

func (h *head) params() []*Param { return []*Param{h.ln.g, h.ln.b, h.w} }

func (h *head) forward(be tensor.Backend, fl *flow) tape {
	z, lt := h.ln.forward(be, fl.al, fl.x)
	n, _ := z.Rows()
	logits := fl.al.new(n, h.w.Shape[0])
	be.Linear(logits, z, h.w.Value, nil, nil)
	fl.loss = be.CrossEntropy(logits, logits, fl.targets, h.vocab)
	fl.x = nil
	return &headTape{h: h, ln: lt, z: z, probs: logits, targets: fl.targets}
}

// backwardInput starts from d(loss)/d(loss) = scale.
func (t *headTape) backwardInput(be tensor.Backend, al *alloc, _ *tensor.Tensor, scale float32) *tensor.Tensor {
	dlogit := t.probs // the probabilities are not needed after this
	be.CrossEntropyBackward(dlogit, t.probs, t.targets, scale)
	dz := al.like(t.z)
	be.LinearBackwardInput(dz, dlogit, t.h.w.Value)
	dx := t.h.ln.backwardInput(be, al, t.ln, dz)
	t.dlogit, t.probs = dlogit, nil
	return dx
}

func (t *headTape) backwardWeight(be tensor.Backend, g grads) {
	be.LinearBackwardWeight(g.of(t.h.w), nil, t.dlogit, t.z)
	t.h.ln.backwardWeight(be, t.ln, g)
}

func (t *headTape) bytes() int64 {
	return t.ln.bytes() + sizeOf(t.z, t.probs, t.dlogit) + int64(len(t.targets))*4
}
