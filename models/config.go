package models

import (
	"fmt"
	"sort"
	"strings"
)

// Config describes a model. Kind "gpt" is GPT-2's architecture (over bytes
// unless Vocab says otherwise); kind "mlp" is a stack of residual per-token MLP
// blocks (no attention).
type Config struct {
	Kind string `json:"kind"`
	// Vocab is the number of tokens. The embedding and LM head hold
	// PaddedVocab rows; the padding rows are never a token nor a target, and
	// the loss gives them no probability.
	Vocab  int  `json:"vocab"`
	Layers int  `json:"layers"`
	Width  int  `json:"width"`
	Heads  int  `json:"heads"`
	Seq    int  `json:"seq"`
	Tied   bool `json:"tied"` // LM head shares the token embedding (GPT-2 style)
	// Gelu is the MLP's GELU: GeluTanh (the tanh approximation, GPT-2's;
	// also when empty) or GeluExact (the erf form, PyTorch's nn.GELU()).
	Gelu string `json:"gelu,omitempty"`
}

// The GELU forms a Config names.
const (
	GeluTanh  = "tanh"
	GeluExact = "exact"
)

// VocabAlign is the multiple the embedding's rows are padded to, as llm.c pads
// GPT-2's 50257 tokens to 50304 so that the head's matrix products tile well.
const VocabAlign = 64

// PaddedVocab is Vocab rounded up to a multiple of VocabAlign: the rows of the
// token embedding and the LM head.
func (c Config) PaddedVocab() int { return (c.Vocab + VocabAlign - 1) / VocabAlign * VocabAlign }

// ExactGelu reports whether the MLP uses the erf GELU.
func (c Config) ExactGelu() bool { return c.Gelu == GeluExact }

// LayerNormEps is GPT-2's LayerNorm epsilon.
const LayerNormEps = 1e-5

// presets are the named models; --layers, --width, --heads and --seq override them.
var presets = map[string]Config{
	"gpt-tiny":   {Kind: "gpt", Vocab: 256, Layers: 4, Width: 128, Heads: 4, Seq: 64},
	"gpt-small":  {Kind: "gpt", Vocab: 256, Layers: 4, Width: 256, Heads: 4, Seq: 128},
	"gpt-medium": {Kind: "gpt", Vocab: 256, Layers: 8, Width: 512, Heads: 8, Seq: 256},
	"gpt2":       {Kind: "gpt", Vocab: 256, Layers: 12, Width: 768, Heads: 12, Seq: 1024, Tied: true},
	"mlp-tiny":   {Kind: "mlp", Vocab: 256, Layers: 4, Width: 128, Heads: 0, Seq: 64},
}

// DefaultPreset is the model `train` and `bench step` use without --model.
const DefaultPreset = "gpt-tiny"

// PresetNames lists the presets in a stable order.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Preset returns a named preset.
func Preset(name string) (Config, error) {
	c, ok := presets[name]
	if !ok {
		return Config{}, fmt.Errorf("unknown model %q (presets: %s)", name, strings.Join(PresetNames(), ", "))
	}
	return c, nil
}

// Validate says what is wrong with a config, if anything.
func (c Config) Validate() error {
	switch {
	case c.Kind != "gpt" && c.Kind != "mlp":
		return fmt.Errorf("model kind %q: want gpt or mlp", c.Kind)
	case c.Vocab < 2:
		return fmt.Errorf("model vocab %d: want at least 2", c.Vocab)
	case c.Layers < 1:
		return fmt.Errorf("model layers %d: want at least 1", c.Layers)
	case c.Width < 1:
		return fmt.Errorf("model width %d: want at least 1", c.Width)
	case c.Seq < 1:
		return fmt.Errorf("model seq %d: want at least 1", c.Seq)
	case c.Kind == "gpt" && (c.Heads < 1 || c.Width%c.Heads != 0):
		return fmt.Errorf("model width %d is not divisible by %d heads", c.Width, c.Heads)
	case c.Gelu != "" && c.Gelu != GeluTanh && c.Gelu != GeluExact:
		return fmt.Errorf("model gelu %q: want %s or %s", c.Gelu, GeluTanh, GeluExact)
	}
	return nil
}

func (c Config) String() string {
	s := fmt.Sprintf("%s layers=%d width=%d heads=%d seq=%d vocab=%d", c.Kind, c.Layers, c.Width, c.Heads, c.Seq, c.Vocab)
	if p := c.PaddedVocab(); p != c.Vocab {
		s = fmt.Sprintf("%s layers=%d width=%d heads=%d seq=%d vocab %d padded to %d", c.Kind, c.Layers, c.Width, c.Heads, c.Seq, c.Vocab, p)
	}
	if c.Tied {
		s += " tied"
	}
	if c.ExactGelu() {
		s += " gelu=exact"
	}
	return s
}

// Unit numbers: the embedding is unit -1, block i is unit i, and the final
// LayerNorm with the head and loss is unit Layers.
const embedUnit = -1

// ParamSpec names one parameter and its shape. Linear weights are [out, in].
type ParamSpec struct {
	Name  string
	Shape []int
	Unit  int  // -1 embedding, 0..Layers-1 block, Layers head
	Decay bool // AdamW applies weight decay (matrices and embeddings, not biases or LayerNorm)
	// TiedTo names the parameter this one copies (the tied LM head copies the
	// token embedding): it starts from the same values and receives the sum of
	// both gradients.
	TiedTo string
}

// Numel is the number of values.
func (p ParamSpec) Numel() int {
	n := 1
	for _, d := range p.Shape {
		n *= d
	}
	return n
}

// layout names a model kind's parameters: GPT-2's follow nanoGPT's state_dict,
// so its checkpoints line up.
type layout struct {
	wte, wpe    string // token and position embeddings (no positions in the MLP model)
	block       string // a block's name prefix, %d its index
	halves      []half // the residual half-blocks of a block, in order
	lnF, lmHead string
}

// half names one residual half-block (see residual) inside a block: its
// LayerNorm and its in and out linear layers, whose widths are inW·D (out of in)
// and midW·D (into out).
type half struct {
	ln, in, out string
	inW, midW   int
	attention   bool // the middle is causal attention, else GELU
}

func (c Config) layout() layout {
	if c.Kind == "gpt" {
		return layout{wte: "transformer.wte.weight", wpe: "transformer.wpe.weight", block: "transformer.h.%d.",
			halves: []half{{"ln_1", "attn.c_attn", "attn.c_proj", 3, 1, true}, {"ln_2", "mlp.c_fc", "mlp.c_proj", 4, 4, false}},
			lnF:    "transformer.ln_f", lmHead: "lm_head.weight"}
	}
	return layout{wte: "embed.weight", block: "h.%d.",
		halves: []half{{"ln", "fc", "proj", 4, 4, false}}, lnF: "ln_f", lmHead: "head.weight"}
}

// Params lists every parameter of the whole model in order (embedding, blocks,
// head).
func (c Config) Params() []ParamSpec {
	var ps []ParamSpec
	add := func(unit int, name string, decay bool, shape ...int) {
		ps = append(ps, ParamSpec{Name: name, Shape: shape, Unit: unit, Decay: decay})
	}
	D, V := c.Width, c.PaddedVocab()
	lin := func(unit int, prefix string, out, in int) {
		add(unit, prefix+".weight", true, out, in)
		add(unit, prefix+".bias", false, out)
	}
	ln := func(unit int, prefix string) {
		add(unit, prefix+".weight", false, D)
		add(unit, prefix+".bias", false, D)
	}
	l := c.layout()
	add(embedUnit, l.wte, true, V, D)
	if l.wpe != "" {
		add(embedUnit, l.wpe, true, c.Seq, D)
	}
	for i := range c.Layers {
		p := fmt.Sprintf(l.block, i)
		for _, h := range l.halves {
			ln(i, p+h.ln)
			lin(i, p+h.in, h.inW*D, D)
			lin(i, p+h.out, D, h.midW*D)
		}
	}
	ln(c.Layers, l.lnF)
	add(c.Layers, l.lmHead, true, V, D)
	if c.Tied {
		ps[len(ps)-1].TiedTo = l.wte
	}
	return ps
}

// NumParams counts distinct parameters (a tied head counts once).
func (c Config) NumParams() int64 {
	var n int64
	for _, p := range c.Params() {
		if p.TiedTo == "" {
			n += int64(p.Numel())
		}
	}
	return n
}

// UnitParams counts the parameters of one unit (-1 embedding, i block, Layers head).
func (c Config) UnitParams(unit int) int64 {
	var n int64
	for _, p := range c.Params() {
		if p.Unit == unit {
			n += int64(p.Numel())
		}
	}
	return n
}

// UnitFLOPs is the forward cost of one unit for one sequence, counting a
// multiply-add as two operations and attention over the full T×T square, as a
// plain implementation computes it (the CPU backend skips the blocks above the
// causal diagonal, so it does a little less). Backward costs twice the forward.
func (c Config) UnitFLOPs(unit int) float64 {
	T, D, V := float64(c.Seq), float64(c.Width), float64(c.PaddedVocab())
	switch {
	case unit == embedUnit:
		return 0
	case unit == c.Layers:
		return 2 * T * D * V
	case c.Kind == "gpt":
		return 2*T*12*D*D + 4*T*T*D
	default:
		return 2 * T * 8 * D * D
	}
}

// StepFLOPs is the cost of forward and backward over batch sequences.
func (c Config) StepFLOPs(batch int) float64 {
	var f float64
	for u := embedUnit; u <= c.Layers; u++ {
		f += c.UnitFLOPs(u)
	}
	return 3 * f * float64(batch)
}
