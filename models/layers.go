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
	backwardWeight(be tensor.Backend, g gradBuf)
	// bytes counts the activations held now.
	bytes() int64
}

// gradBuf is one flat gradient buffer laid out like the stage's parameters.
type gradBuf []float32

// of views p's gradient in the buffer.
func (g gradBuf) of(p *Param) *tensor.Tensor {
	return &tensor.Tensor{Shape: p.Shape, Data: g[p.off : p.off+p.Numel()]}
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
	y, mean, rstd := al.like(x), al.new(n), al.new(n)
	be.LayerNorm(y, mean, rstd, x, l.g.Value, l.b.Value, LayerNormEps)
	return y, &lnTape{x: x, mean: mean, rstd: rstd}
}

func (l layerNorm) backwardInput(be tensor.Backend, al *alloc, t *lnTape, dy *tensor.Tensor) *tensor.Tensor {
	dx := al.like(t.x)
	be.LayerNormBackwardInput(dx, dy, t.x, t.mean, t.rstd, l.g.Value)
	t.dy = dy
	return dx
}

func (l layerNorm) backwardWeight(be tensor.Backend, t *lnTape, g gradBuf) {
	be.LayerNormBackwardWeight(g.of(l.g), g.of(l.b), t.dy, t.x, t.mean, t.rstd)
}

func (t *lnTape) bytes() int64 { return sizeOf(t.x, t.mean, t.rstd, t.dy) }

// residualMLP is x + c_proj(gelu(c_fc(ln(x)))): GPT-2's MLP half-block, and the
// whole block of the MLP model.
type residualMLP struct {
	ln       layerNorm
	fc, proj linear
}

type mlpTape struct {
	m           *residualMLP
	ln          *lnTape
	a, f, th, g *tensor.Tensor // ln output, fc output, tanh saved by GELU, GELU output
	df, dy      *tensor.Tensor // kept for the weight gradients
}

func (m *residualMLP) params() []*Param {
	return []*Param{m.ln.g, m.ln.b, m.fc.w, m.fc.b, m.proj.w, m.proj.b}
}

func (m *residualMLP) forward(be tensor.Backend, fl *flow) tape {
	x := fl.x
	n, _ := x.Rows()
	hidden := m.fc.w.Shape[0]
	a, lt := m.ln.forward(be, fl.al, x)
	f := fl.al.new(n, hidden)
	be.Linear(f, a, m.fc.w.Value, m.fc.b.Value, nil)
	th, g := fl.al.like(f), fl.al.like(f)
	be.Gelu(g, th, f)
	y := fl.al.like(x)
	be.Linear(y, g, m.proj.w.Value, m.proj.b.Value, x)
	fl.x = y
	return &mlpTape{m: m, ln: lt, a: a, f: f, th: th, g: g}
}

func (t *mlpTape) backwardInput(be tensor.Backend, al *alloc, dy *tensor.Tensor, _ float32) *tensor.Tensor {
	m := t.m
	dg := al.like(t.g)
	be.LinearBackwardInput(dg, dy, m.proj.w.Value)
	df := dg // GELU's backward may write over its input gradient
	be.GeluBackward(df, dg, t.f, t.th)
	da := al.like(t.a)
	be.LinearBackwardInput(da, df, m.fc.w.Value)
	dx := m.ln.backwardInput(be, al, t.ln, da)
	be.Add(dx, dx, dy)
	t.df, t.dy = df, dy
	t.f, t.th = nil, nil
	return dx
}

func (t *mlpTape) backwardWeight(be tensor.Backend, g gradBuf) {
	m := t.m
	be.LinearBackwardWeight(g.of(m.proj.w), g.of(m.proj.b), t.dy, t.g)
	be.LinearBackwardWeight(g.of(m.fc.w), g.of(m.fc.b), t.df, t.a)
	m.ln.backwardWeight(be, t.ln, g)
}

func (t *mlpTape) bytes() int64 { return t.ln.bytes() + sizeOf(t.a, t.f, t.th, t.g, t.df, t.dy) }

// residualAttention is x + c_proj(attn(c_attn(ln_1(x)))): GPT-2's attention
// half-block with causal multi-head attention.
type residualAttention struct {
	ln         layerNorm
	qkv, proj  linear
	heads, seq int
}

type attnTape struct {
	a                   *residualAttention
	ln                  *lnTape
	in, qkv, probs, att *tensor.Tensor // ln output, q|k|v, softmax, attention output
	dqkv, dy            *tensor.Tensor
}

func (m *residualAttention) params() []*Param {
	return []*Param{m.ln.g, m.ln.b, m.qkv.w, m.qkv.b, m.proj.w, m.proj.b}
}

func (m *residualAttention) forward(be tensor.Backend, fl *flow) tape {
	x := fl.x
	B, T, D := x.Shape[0], x.Shape[1], x.Shape[2]
	in, lt := m.ln.forward(be, fl.al, x)
	qkv := fl.al.new(B, T, 3*D)
	be.Linear(qkv, in, m.qkv.w.Value, m.qkv.b.Value, nil)
	att, probs := fl.al.like(x), fl.al.new(B, m.heads, T, T)
	be.Attention(att, probs, qkv, m.heads)
	y := fl.al.like(x)
	be.Linear(y, att, m.proj.w.Value, m.proj.b.Value, x)
	fl.x = y
	return &attnTape{a: m, ln: lt, in: in, qkv: qkv, probs: probs, att: att}
}

func (t *attnTape) backwardInput(be tensor.Backend, al *alloc, dy *tensor.Tensor, _ float32) *tensor.Tensor {
	m := t.a
	datt := al.like(t.att)
	be.LinearBackwardInput(datt, dy, m.proj.w.Value)
	dqkv := al.like(t.qkv)
	be.AttentionBackward(dqkv, datt, t.qkv, t.probs, m.heads)
	din := al.like(t.in)
	be.LinearBackwardInput(din, dqkv, m.qkv.w.Value)
	dx := m.ln.backwardInput(be, al, t.ln, din)
	be.Add(dx, dx, dy)
	t.dqkv, t.dy = dqkv, dy
	t.qkv, t.probs = nil, nil
	return dx
}

func (t *attnTape) backwardWeight(be tensor.Backend, g gradBuf) {
	m := t.a
	be.LinearBackwardWeight(g.of(m.proj.w), g.of(m.proj.b), t.dy, t.att)
	be.LinearBackwardWeight(g.of(m.qkv.w), g.of(m.qkv.b), t.dqkv, t.in)
	m.ln.backwardWeight(be, t.ln, g)
}

func (t *attnTape) bytes() int64 {
	return t.ln.bytes() + sizeOf(t.in, t.qkv, t.probs, t.att, t.dqkv, t.dy)
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

func (t *embedTape) backwardWeight(be tensor.Backend, g gradBuf) {
	var dwpe *tensor.Tensor
	if t.e.wpe != nil {
		dwpe = g.of(t.e.wpe)
	}
	be.EmbedBackward(g.of(t.e.wte), dwpe, t.dy, t.tokens)
}

func (t *embedTape) bytes() int64 { return int64(len(t.tokens))*4 + sizeOf(t.dy) }

// head is the final LayerNorm, the LM head (no bias) and the cross-entropy loss.
type head struct {
	ln layerNorm
	w  *Param // [V, D]; a copy of the token embedding when tied
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
	fl.loss = be.CrossEntropy(logits, logits, fl.targets)
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

func (t *headTape) backwardWeight(be tensor.Backend, g gradBuf) {
	be.LinearBackwardWeight(g.of(t.h.w), nil, t.dlogit, t.z)
	t.h.ln.backwardWeight(be, t.ln, g)
}

func (t *headTape) bytes() int64 {
	return t.ln.bytes() + sizeOf(t.z, t.probs, t.dlogit) + int64(len(t.targets))*4
}
