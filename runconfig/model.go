package runconfig

import (
	"fmt"
	"strings"

	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/plan"
)

// ModelFlags choose the model: rows of the option table that `train` and
// `bench step` embed. A preset gives every field; the other flags override
// it where set.
type ModelFlags struct {
	Model  string `arg:"--model" default:"gpt-tiny" help:"preset: gpt-tiny, gpt-small, gpt-medium, gpt2, mlp-tiny"`
	Layers int    `arg:"--layers" help:"number of blocks (overrides the preset)" alias:"num_layers,n_layer,n_layers" same:"true"`
	Width  int    `arg:"--width" help:"model width d (overrides the preset)" alias:"hidden_size,n_embd,d_model,dim" same:"true"`
	Heads  int    `arg:"--heads" help:"attention heads (overrides the preset)" alias:"num_attention_heads,n_head,n_heads" same:"true"`
	Seq    int    `arg:"--seq" help:"sequence length in tokens (overrides the preset)" alias:"seq_length,seq_len,block_size,max_seq_len" same:"true"`
	Tied   bool   `arg:"--tied" help:"tie the LM head to the token embedding (the gpt2 preset is always tied)" alias:"tie_word_embeddings,weight_tying" same:"true"`
	Vocab  int    `arg:"--vocab" placeholder:"N" help:"tokens in the vocabulary, e.g. 50257 for GPT-2's tokenizer; the embedding is padded to a multiple of 64 rows, never sampled nor counted in the loss [default: 256, a token per byte]" alias:"vocab_size" same:"true"`
	Gelu   string `arg:"--gelu" default:"tanh" help:"MLP activation: tanh (GPT-2's approximation) or exact (erf, nanoGPT's nn.GELU())" same:"true"`
}

// Config resolves the preset and overrides into a checked model config.
func (f ModelFlags) Config() (models.Config, error) {
	c, err := models.Preset(f.Model)
	if err != nil {
		return c, fmt.Errorf("--model: %w", err)
	}
	for _, o := range []struct {
		flag string
		v    int
		dst  *int
	}{{"--layers", f.Layers, &c.Layers}, {"--width", f.Width, &c.Width}, {"--heads", f.Heads, &c.Heads}, {"--seq", f.Seq, &c.Seq}, {"--vocab", f.Vocab, &c.Vocab}} {
		if o.v < 0 {
			return c, fmt.Errorf("%s %d: want a positive number", o.flag, o.v)
		}
		if o.v > 0 {
			*o.dst = o.v
		}
	}
	c.Tied = c.Tied || f.Tied
	switch f.Gelu {
	case "", models.GeluTanh: // the default, which a config leaves unnamed
	case models.GeluExact:
		c.Gelu = models.GeluExact
	default:
		return c, fmt.Errorf("--gelu %q: want %s or %s", f.Gelu, models.GeluTanh, models.GeluExact)
	}
	return c, c.Validate()
}

// CutFlags choose how the model is cut into pipeline stages; `train`
// embeds them beside ModelFlags.
type CutFlags struct {
	LayersPerStage string `arg:"--layers-per-stage" help:"explicit cut, e.g. 3,3,2,2 (overrides --balance)"`
	Balance        string `arg:"--balance" default:"uniform" help:"cut by: uniform, params, flops, or profile:FILE (the measured block times of train --profile)" ds:"pipeline.partition_method"`
}

// Cut returns the number of blocks of cfg in each of stages stages; read
// reads the profile that --balance profile:FILE names.
func (f CutFlags) Cut(cfg models.Config, stages int, read func(path string) (*plan.Profile, error)) ([]int, error) {
	if path, ok := strings.CutPrefix(f.Balance, "profile:"); ok && f.LayersPerStage == "" {
		p, err := read(path)
		if err != nil {
			return nil, fmt.Errorf("--balance profile:%w", err)
		}
		cut, err := p.CutModel(cfg, stages)
		if err != nil {
			return nil, fmt.Errorf("--balance profile:%s: %w", path, err)
		}
		return cut, nil
	}
	if f.LayersPerStage == "" {
		cut, err := models.Partition(cfg, stages, f.Balance)
		if err != nil {
			return nil, fmt.Errorf("--balance: %w", err)
		}
		return cut, nil
	}
	cut, err := models.ParseLayersPerStage(f.LayersPerStage, cfg.Layers)
	if err != nil {
		return nil, fmt.Errorf("--layers-per-stage: %w", err)
	}
	if len(cut) != stages {
		return nil, fmt.Errorf("--layers-per-stage %s names %d stages, but the pipeline has %d", f.LayersPerStage, len(cut), stages)
	}
	return cut, nil
}
