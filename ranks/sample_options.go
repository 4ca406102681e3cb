package ranks

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The sampling options as the command line gives them (train's and
// pplaunch sample's --sample-tokens, --temperature, --top-k, --prompt),
// checked, and a sample as both print it.

// Check refuses options no sampler can follow, naming the flag that gave each.
func (o SampleOptions) Check() error {
	switch {
	case o.Tokens < 0:
		return fmt.Errorf("--sample-tokens %d: want 0 (no sample) or more", o.Tokens)
	case o.Temperature < 0 || math.IsNaN(o.Temperature) || math.IsInf(o.Temperature, 0):
		return fmt.Errorf("--temperature %v: want a finite number, 0 or more", o.Temperature)
	case o.TopK < 0:
		return fmt.Errorf("--top-k %d: want 0 (all tokens) or more", o.TopK)
	}
	return nil
}

// ByteVocab is the vocabulary of the byte-level models, whose tokens are text.
const ByteVocab = 256

// ParsePrompt turns --prompt s into tokens of a vocabulary of vocab: its
// bytes for a byte-level model, else space- or comma-separated token ids.
func ParsePrompt(s string, vocab int) ([]int32, error) {
	if vocab == ByteVocab {
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

// FormatSample is a sample on one line: prompt and continuation quoted as
// Go strings for a byte-level model (any byte survives, and the line
// parses back with strconv.Unquote), else as token ids.
func FormatSample(vocab int, prompt, gen []int32) string {
	if vocab != ByteVocab {
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
