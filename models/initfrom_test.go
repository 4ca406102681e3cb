package models

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/models/safetensors"
)

// paddedGPT has a vocabulary of 100 tokens, padded to 128 rows.
func paddedGPT(tied bool) Config {
	return Config{Kind: "gpt", Vocab: 100, Layers: 2, Width: 16, Heads: 2, Seq: 8, Tied: tied}
}

// oneLoss is the loss of one forward pass of the whole model on one batch.
func oneLoss(t *testing.T, s *Stage, tokens, targets []int32) float64 {
	t.Helper()
	out, err := s.Forward(-1, Input{Tokens: tokens, Targets: targets})
	if err != nil {
		t.Fatal(err)
	}
	s.Discard(-1)
	return out.Loss
}

// nanoTensors is the nanoGPT-named file of a stage holding the whole model.
func nanoTensors(s *Stage) []safetensors.Tensor {
	var ts []safetensors.Tensor
	for _, p := range s.Params() {
		if p.TiedTo == "" {
			ts = append(ts, safetensors.FromFloat32(p.Name, p.Shape, p.Value.Data))
		}
	}
	return ts
}

// hfTensors converts a stage holding the whole model to Hugging Face's GPT-2
// layout: names without "transformer.", Conv1D weights [in, out], the
// vocabulary's rows only, 16 positions (more than the model's 8), the mask
// buffers, and no LM head.
func hfTensors(s *Stage) []safetensors.Tensor {
	cfg := s.Config()
	var ts []safetensors.Tensor
	for _, p := range s.Params() {
		name, v, shape := strings.TrimPrefix(p.Name, "transformer."), p.Value.Data, p.Shape
		switch {
		case p.Name == "lm_head.weight":
			continue
		case slices.ContainsFunc(hfConv1D, func(c string) bool { return strings.HasSuffix(name, "."+c) }):
			v, shape = transpose(v, shape[0], shape[1]), []int{shape[1], shape[0]}
		case name == "wte.weight":
			v, shape = v[:cfg.Vocab*cfg.Width], []int{cfg.Vocab, cfg.Width}
		case name == "wpe.weight":
			v, shape = append(slices.Clone(v), make([]float32, 8*cfg.Width)...), []int{16, cfg.Width}
		}
		ts = append(ts, safetensors.FromFloat32(name, shape, v))
	}
	for i := range cfg.Layers {
		mask := make([]float32, 16*16)
		for r := range 16 {
			for c := 0; c <= r; c++ {
				mask[r*16+c] = 1
			}
		}
		ts = append(ts, safetensors.FromFloat32(fmt.Sprintf("h.%d.attn.bias", i), []int{1, 1, 16, 16}, mask),
			safetensors.FromFloat32(fmt.Sprintf("h.%d.attn.masked_bias", i), nil, []float32{-1e4}))
	}
	return ts
}

// A Hugging Face GPT-2 file converted from a known model loads to the same
// loss as the nanoGPT-named file of that model, tied or not (the head comes
// from the embedding), and the vocabulary's rows match exactly.
func TestInitFromHuggingFaceGPT2(t *testing.T) {
	be := testBackend(t)
	for _, tied := range []bool{true, false} {
		t.Run(fmt.Sprintf("tied=%v", tied), func(t *testing.T) {
			cfg := paddedGPT(tied)
			src, err := NewStage(cfg, []int{2}, 0, be, StageOptions{Seed: 9})
			if err != nil {
				t.Fatal(err)
			}
			if !tied { // as in GPT-2, the head is the embedding
				be.Copy(src.Param("lm_head.weight").Value, src.Param("transformer.wte.weight").Value)
			}
			dir := t.TempDir()
			nano, hf := filepath.Join(dir, "nano.safetensors"), filepath.Join(dir, "model.safetensors")
			if err := safetensors.WriteFile(nano, nanoTensors(src), nil); err != nil {
				t.Fatal(err)
			}
			if err := safetensors.WriteFile(hf, hfTensors(src), nil); err != nil {
				t.Fatal(err)
			}
			// save_pretrained of a GPT2LMHeadModel: the same under "transformer.".
			prefixed := filepath.Join(dir, "lmhead.safetensors")
			ts := hfTensors(src)
			for i := range ts {
				ts[i].Name = "transformer." + ts[i].Name
			}
			if err := safetensors.WriteFile(prefixed, ts, nil); err != nil {
				t.Fatal(err)
			}
			tokens, targets := batch(rand.New(rand.NewPCG(1, 2)), cfg, 3)
			losses := map[string]float64{}
			for _, path := range []string{nano, hf, prefixed} {
				dst, err := NewStage(cfg, []int{2}, 0, be, StageOptions{Seed: 1})
				if err != nil {
					t.Fatal(err)
				}
				before := oneLoss(t, dst, tokens, targets)
				if err := dst.InitFrom(path); err != nil {
					t.Fatal(err)
				}
				losses[path] = oneLoss(t, dst, tokens, targets)
				if before == losses[path] {
					t.Fatalf("%s: loss %v did not change on loading", path, before)
				}
				for _, p := range dst.Params() {
					n := p.Numel()
					if p.Name == "transformer.wte.weight" || p.Name == "lm_head.weight" {
						n = cfg.Vocab * cfg.Width // the padding rows may differ
					}
					if !slices.Equal(p.Value.Data[:n], src.Param(p.Name).Value.Data[:n]) {
						t.Fatalf("%s: %s differs from the model the file was made from", filepath.Base(path), p.Name)
					}
				}
			}
			if want := oneLoss(t, src, tokens, targets); losses[hf] != want || losses[nano] != want || losses[prefixed] != want {
				t.Fatalf("loss after loading: Hugging Face layout %v (under transformer. %v), nanoGPT layout %v, the model %v",
					losses[hf], losses[prefixed], losses[nano], want)
			}
		})
	}
}

func TestInitFromHuggingFaceErrors(t *testing.T) {
	be := testBackend(t)
	cfg := paddedGPT(true)
	src, _ := NewStage(cfg, []int{2}, 0, be, StageOptions{Seed: 9})
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		edit func([]safetensors.Tensor) []safetensors.Tensor
		want string
	}{
		{"untransposed Conv1D", func(ts []safetensors.Tensor) []safetensors.Tensor {
			for i, x := range ts {
				if x.Name == "h.1.mlp.c_fc.weight" {
					p := src.Param("transformer.h.1.mlp.c_fc.weight")
					ts[i] = safetensors.FromFloat32(x.Name, p.Shape, p.Value.Data)
				}
			}
			return ts
		}, "(Hugging Face GPT-2 layout): h.1.mlp.c_fc.weight has shape [64 16], the model wants [16 64] (a Conv1D weight, stored [in, out])"},
		{"missing block", func(ts []safetensors.Tensor) []safetensors.Tensor {
			return slices.DeleteFunc(ts, func(x safetensors.Tensor) bool { return x.Name == "h.1.ln_2.bias" })
		}, "no tensor h.1.ln_2.bias"},
		{"wrong vocabulary", func(ts []safetensors.Tensor) []safetensors.Tensor {
			for i, x := range ts {
				if x.Name == "wte.weight" {
					ts[i] = safetensors.FromFloat32(x.Name, []int{90, 16}, make([]float32, 90*16))
				}
			}
			return ts
		}, "wte.weight has shape [90 16], the model wants [128 16]"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".safetensors")
		if err := safetensors.WriteFile(path, c.edit(hfTensors(src)), nil); err != nil {
			t.Fatal(err)
		}
		dst, _ := NewStage(cfg, []int{2}, 0, be, StageOptions{Seed: 1})
		if err := dst.InitFrom(path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// The padding rows of the LM head and the embedding get no gradient: the
// loss gives them no probability, and no token is a padding row.
func TestPaddingRowsGetNoGradient(t *testing.T) {
	be := testBackend(t)
	for _, tied := range []bool{true, false} {
		cfg := paddedGPT(tied)
		if cfg.PaddedVocab() != 128 {
			t.Fatalf("vocab %d padded to %d, want 128", cfg.Vocab, cfg.PaddedVocab())
		}
		s, err := NewStage(cfg, []int{2}, 0, be, StageOptions{Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		tokens, targets := batch(rand.New(rand.NewPCG(3, 4)), cfg, 4)
		if err := s.BeginStep(0, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Forward(0, Input{Tokens: tokens, Targets: targets}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Backward(0, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.FinishStep(); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"lm_head.weight", "transformer.wte.weight"} {
			g := make([]float32, s.Param(name).Numel())
			be.Download(g, s.Param(name).Grad)
			V, D := cfg.Vocab, cfg.Width
			if slices.ContainsFunc(g[V*D:], func(v float32) bool { return v != 0 }) {
				t.Errorf("tied=%v: %s has a gradient in its padding rows %d..%d", tied, name, V, cfg.PaddedVocab()-1)
			}
			if !slices.ContainsFunc(g[:V*D], func(v float32) bool { return v != 0 }) {
				t.Errorf("tied=%v: %s has no gradient at all", tied, name)
			}
		}
	}
}

func TestConfigVocabAndGelu(t *testing.T) {
	c := Config{Kind: "gpt", Vocab: 50257, Layers: 1, Width: 8, Heads: 2, Seq: 4}
	if c.PaddedVocab() != 50304 {
		t.Fatalf("50257 padded to %d, want 50304", c.PaddedVocab())
	}
	if s := c.String(); !strings.Contains(s, "vocab 50257 padded to 50304") {
		t.Fatalf("String() = %q", s)
	}
	if c.Params()[0].Shape[0] != 50304 {
		t.Fatalf("wte shape %v", c.Params()[0].Shape)
	}
	c.Vocab = 256
	if s := c.String(); !strings.Contains(s, "vocab=256") || strings.Contains(s, "padded") {
		t.Fatalf("String() = %q", s)
	}
	c.Gelu = "erf"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `gelu "erf": want tanh or exact`) {
		t.Fatalf("bad gelu: %v", err)
	}
}
