package main

import (
	"fmt"

	"github.com/pplaunch/pplaunch/models"
)

// modelFlags choose the model; `bench step` and `train` embed them. A preset
// gives every field; the other flags override it where set.
type modelFlags struct {
	Model  string `arg:"--model" default:"gpt-tiny" help:"preset: gpt-tiny, gpt-small, gpt-medium, gpt2, mlp-tiny"`
	Layers int    `arg:"--layers" help:"number of blocks (overrides the preset)"`
	Width  int    `arg:"--width" help:"model width d (overrides the preset)"`
	Heads  int    `arg:"--heads" help:"attention heads (overrides the preset)"`
	Seq    int    `arg:"--seq" help:"sequence length in bytes (overrides the preset)"`
	Tied   bool   `arg:"--tied" help:"tie the LM head to the token embedding"`
}

// config resolves the preset and overrides into a checked model config.
func (f modelFlags) config() (models.Config, error) {
	c, err := models.Preset(f.Model)
	if err != nil {
		return c, fmt.Errorf("--model: %w", err)
	}
	for _, o := range []struct {
		flag string
		v    int
		dst  *int
	}{{"--layers", f.Layers, &c.Layers}, {"--width", f.Width, &c.Width}, {"--heads", f.Heads, &c.Heads}, {"--seq", f.Seq, &c.Seq}} {
		if o.v < 0 {
			return c, fmt.Errorf("%s %d: want a positive number", o.flag, o.v)
		}
		if o.v > 0 {
			*o.dst = o.v
		}
	}
	c.Tied = c.Tied || f.Tied
	return c, c.Validate()
}
