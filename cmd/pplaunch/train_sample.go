package main

import "github.com/pplaunch/pplaunch/ranks"

// genFlags choose the text generated from a model: at the end of train, and
// by pplaunch sample.
type genFlags struct {
	SampleTokens int     `arg:"--sample-tokens" default:"64" placeholder:"N" help:"tokens to generate (0: no sample)"`
	Temperature  float64 `arg:"--temperature" default:"0.8" help:"divide the logits by this before sampling (0: always the most likely token)"`
	TopK         int     `arg:"--top-k" default:"40" placeholder:"K" help:"sample among the K most likely tokens (0: all)"`
	Prompt       string  `arg:"--prompt" placeholder:"TEXT" help:"start from this text (token ids, space-separated, when the vocabulary is not bytes) [default: the start of the validation split]"`
}

// sampleFlags are train's: genFlags and how often.
type sampleFlags struct {
	genFlags
	SampleEvery int `arg:"--sample-every" placeholder:"K" help:"also print a sample every K steps"`
}

// options checks the flags and returns the sampling options for a model of
// vocab tokens, seeded by seed.
func (g genFlags) options(vocab int, seed uint64) (ranks.SampleOptions, error) {
	o := ranks.SampleOptions{Tokens: g.SampleTokens, Temperature: g.Temperature, TopK: g.TopK, Seed: seed}
	if err := o.Check(); err != nil {
		return o, err
	}
	if g.Prompt != "" {
		p, err := ranks.ParsePrompt(g.Prompt, vocab)
		if err != nil {
			return o, err
		}
		o.Prompt = p
	}
	return o, nil
}
