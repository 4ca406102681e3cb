package ranks

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestParsePrompt(t *testing.T) {
	for _, c := range []struct {
		s       string
		vocab   int
		want    []int32
		wantErr string
	}{
		{"Hi\n", ByteVocab, []int32{'H', 'i', '\n'}, ""},
		{"464, 3290 13", 50304, []int32{464, 3290, 13}, ""},
		{"464 x", 50304, nil, `--prompt "464 x": "x" is not a token id of the vocabulary of 50304 (the model is not byte-level: give ids, e.g. "464 3290")`},
		{"50304", 50304, nil, `--prompt "50304": "50304" is not a token id of the vocabulary of 50304`},
		{"-1", 50304, nil, `"-1" is not a token id`},
		{" , ", 50304, nil, `--prompt " , " holds no token ids`},
	} {
		got, err := ParsePrompt(c.s, c.vocab)
		if c.wantErr == "" && (err != nil || !slices.Equal(got, c.want)) {
			t.Errorf("ParsePrompt(%q, %d) = %v, %v; want %v", c.s, c.vocab, got, err, c.want)
		}
		if c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("ParsePrompt(%q, %d): %v, want %q", c.s, c.vocab, err, c.wantErr)
		}
	}
}

func TestFormatSample(t *testing.T) {
	for _, c := range []struct {
		vocab       int
		prompt, gen []int32
		want        string
	}{
		{ByteVocab, []int32{'a', '"'}, []int32{'\n', 0xff}, `"a\"" → "\n\xff"`},
		{1000, []int32{1, 2}, []int32{3}, "[1 2] → [3]"},
	} {
		if got := FormatSample(c.vocab, c.prompt, c.gen); got != c.want {
			t.Errorf("FormatSample(%d, %v, %v) = %s, want %s", c.vocab, c.prompt, c.gen, got, c.want)
		}
	}
}

func TestSampleOptionsCheck(t *testing.T) {
	for _, c := range []struct {
		o    SampleOptions
		want string
	}{
		{SampleOptions{Tokens: 64, Temperature: 0.8, TopK: 40}, ""},
		{SampleOptions{}, ""},
		{SampleOptions{Tokens: -1}, "--sample-tokens -1: want 0 (no sample) or more"},
		{SampleOptions{Temperature: -0.5}, "--temperature -0.5: want a finite number, 0 or more"},
		{SampleOptions{Temperature: math.NaN()}, "--temperature NaN: want a finite number, 0 or more"},
		{SampleOptions{Temperature: math.Inf(1)}, "--temperature +Inf: want a finite number, 0 or more"},
		{SampleOptions{TopK: -2}, "--top-k -2: want 0 (all tokens) or more"},
	} {
		got := ""
		if err := c.o.Check(); err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%+v: Check() = %q, want %q", c.o, got, c.want)
		}
	}
}
