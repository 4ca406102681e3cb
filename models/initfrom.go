package models

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pplaunch/pplaunch/models/safetensors"
)

// InitFrom replaces the stage's parameters with the tensors of a safetensors
// file made elsewhere, in one of two layouts, told apart by the names:
//
//   - nanoGPT's state_dict: the names and [out, in] layouts of Config.Params
//     (transformer.h.0.attn.c_attn.weight, lm_head.weight, ...);
//   - Hugging Face's GPT-2 model.safetensors: the same names without the
//     "transformer." prefix (h.0.attn.c_attn.weight; with it, as
//     save_pretrained writes a GPT2LMHeadModel, is read too), the Conv1D
//     weights (attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj) stored
//     [in, out] and transposed here, the attention mask buffers (attn.bias,
//     attn.masked_bias) ignored, and no LM head: it takes the token
//     embedding's values. The layout is told by c_attn's shape, [D, 3D]
//     rather than nanoGPT's [3D, D].
//
// F32, F64, F16 and BF16 are accepted. The token embedding and LM head may
// hold Vocab rows rather than PaddedVocab (Hugging Face's 50257 for 50304):
// the padding rows start at zero. The position embedding may hold more rows
// than Seq (GPT-2's 1024 for a shorter --seq): the first Seq are taken. A
// tied LM head takes the token embedding (the file may hold the head too, with
// the same values, or not at all), so every stage starts from the same tied
// values. Every parameter must be present with the right shape; tensors the
// stage does not hold are ignored (they belong to other stages).
func (s *Stage) InitFrom(path string) error {
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return fmt.Errorf("init from %s: %w", path, err)
	}
	w := weightFile{f: f, cfg: s.cfg}
	w.strip, w.hf = hfLayout(f, s.cfg)
	vals := make([][]float32, len(s.params))
	for i, p := range s.params {
		if vals[i], err = w.param(p.ParamSpec); err != nil {
			return fmt.Errorf("init from %s (%s layout): %w", path, w.layoutName(), err)
		}
	}
	for i, p := range s.params {
		s.be.Upload(p.Value, vals[i])
	}
	return nil
}

// hfConv1D are the GPT-2 weights Hugging Face stores as Conv1D, [in, out].
var hfConv1D = []string{"attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight"}

// hfLayout says how a GPT's file differs from nanoGPT's names and layout:
// strip, its names lack "transformer." (it has wte.weight, not
// transformer.wte.weight); conv1d, its c_attn weights are Hugging Face's
// Conv1D [D, 3D].
func hfLayout(f *safetensors.File, cfg Config) (strip, conv1d bool) {
	if cfg.Kind != "gpt" {
		return false, false
	}
	_, bare := f.Get("wte.weight")
	_, nano := f.Get(cfg.layout().wte)
	for _, t := range f.Tensors {
		if strings.HasSuffix(t.Name, ".attn.c_attn.weight") && len(t.Shape) == 2 {
			conv1d = t.Shape[1] == 3*t.Shape[0]
			break
		}
	}
	return bare && !nano, conv1d
}

// weightFile reads a model's parameters from a file in either layout.
type weightFile struct {
	f     *safetensors.File
	cfg   Config
	strip bool // names without "transformer."
	hf    bool // Conv1D weights, and the LM head is the embedding
}

func (w weightFile) layoutName() string {
	if w.hf || w.strip {
		return "Hugging Face GPT-2"
	}
	return "nanoGPT"
}

// fileName is the name a parameter has in the file and whether the file
// stores it transposed.
func (w weightFile) fileName(name string) (string, bool) {
	n := name
	if w.strip {
		n = strings.TrimPrefix(name, "transformer.")
	}
	return n, w.hf && slices.ContainsFunc(hfConv1D, func(s string) bool { return strings.HasSuffix(n, "."+s) })
}

// param returns the values of one parameter, taking a tied (or, in the
// Hugging Face layout, absent) LM head from the token embedding.
func (w weightFile) param(p ParamSpec) ([]float32, error) {
	l := w.cfg.layout()
	v, ok, err := w.read(p.Name, p.Shape)
	if err != nil {
		return nil, err
	}
	from := p.TiedTo
	if from == "" && w.hf && p.Name == l.lmHead && !ok {
		from = l.wte
	}
	if from != "" {
		e, eok, err := w.read(from, p.Shape) // a tied copy has its original's shape
		switch {
		case err != nil:
			return nil, err
		case eok && ok && !slices.Equal(e, v):
			return nil, fmt.Errorf("%s and %s hold different values, but the model ties them", from, p.Name)
		case eok:
			v, ok = e, true
		}
	}
	if !ok {
		n, _ := w.fileName(p.Name)
		return nil, fmt.Errorf("no tensor %s", n)
	}
	return v, nil
}

// read converts the parameter name from the file, if it is there, to the
// model's shape: transposing a Conv1D weight, padding the vocabulary rows,
// cropping the positions.
func (w weightFile) read(name string, shape []int) ([]float32, bool, error) {
	fname, transposed := w.fileName(name)
	t, ok := w.f.Get(fname)
	if !ok {
		return nil, false, nil
	}
	l := w.cfg.layout()
	fshape := t.Shape
	want := slices.Clone(shape)
	switch {
	case transposed && len(shape) == 2:
		want = []int{shape[1], shape[0]}
	case (name == l.wte || name == l.lmHead) && len(fshape) == 2 && fshape[0] == w.cfg.Vocab:
		want[0] = w.cfg.Vocab // padding rows follow
	case name == l.wpe && len(fshape) == 2 && fshape[0] > shape[0]:
		want[0] = fshape[0] // cropped to the sequence below
	}
	if !slices.Equal(fshape, want) {
		msg := fmt.Sprintf("%s has shape %v, the model wants %v", fname, fshape, want)
		if transposed {
			msg += " (a Conv1D weight, stored [in, out])"
		}
		return nil, true, fmt.Errorf("%s", msg)
	}
	v, err := t.Float32s()
	if err != nil {
		return nil, true, fmt.Errorf("%s: %w", fname, err)
	}
	switch {
	case transposed:
		v = transpose(v, want[0], want[1])
	case want[0] < shape[0]:
		v = append(v, make([]float32, (shape[0]-want[0])*shape[1])...)
	case want[0] > shape[0]:
		v = v[:shape[0]*shape[1]]
	}
	return v, true, nil
}

// transpose returns the [cols, rows] transpose of a row-major [rows, cols] matrix.
func transpose(v []float32, rows, cols int) []float32 {
	out := make([]float32, len(v))
	for i := range rows {
		for j := range cols {
			out[j*rows+i] = v[i*cols+j]
		}
	}
	return out
}
