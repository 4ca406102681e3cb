package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/pplaunch/pplaunch/ranks"
)

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
	switch {
	case g.SampleTokens < 0:
		return o, fmt.Errorf("--sample-tokens %d: want 0 (no sample) or more", g.SampleTokens)
	case g.Temperature < 0 || math.IsNaN(g.Temperature) || math.IsInf(g.Temperature, 0):
		return o, fmt.Errorf("--temperature %v: want a finite number, 0 or more", g.Temperature)
	case g.TopK < 0:
		return o, fmt.Errorf("--top-k %d: want 0 (all tokens) or more", g.TopK)
	}
	if g.Prompt != "" {
		p, err := parsePrompt(g.Prompt, vocab)
		if err != nil {
			return o, err
		}
		o.Prompt = p
	}
	return o, nil
}

// byteVocab is the vocabulary of the byte-level models, whose tokens are text.
const byteVocab = 256

// parsePrompt turns --prompt into tokens: its bytes for a byte-level model,
// else space- or comma-separated token ids.
func parsePrompt(s string, vocab int) ([]int32, error) {
	if vocab == byteVocab {
		out := make([]int32, len(s))
		for i := range len(s) {
			out[i] = int32(s[i])
		}
		return out, nil
	}
	var out []int32
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' }) {
		v, err := strconv.Atoi(f)
		if err != nil || v < 0 || v >= vocab {
			return nil, fmt.Errorf("--prompt %q: %q is not a token id of the vocabulary of %d (the model is not byte-level: give ids, e.g. \"464 3290\")", s, f, vocab)
		}
		out = append(out, int32(v))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--prompt %q holds no token ids", s)
	}
	return out, nil
}

// formatSample is a sample on one line: prompt and continuation quoted as
// Go strings for a byte-level model (any byte survives, and the line
// parses back with strconv.Unquote), else as token ids.
func formatSample(vocab int, prompt, gen []int32) string {
	if vocab != byteVocab {
		return fmt.Sprintf("%v → %v", prompt, gen)
	}
	text := func(ts []int32) string {
		b := make([]byte, len(ts))
		for i, t := range ts {
			b[i] = byte(t)
		}
		return strconv.Quote(string(b))
	}
	return text(prompt) + " → " + text(gen)
}
