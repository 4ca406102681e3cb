package main

// sampleFlags choose the text rank 0 generates from the model at the end
// of train (and every --sample-every steps).
type sampleFlags struct {
	SampleEvery  int     `arg:"--sample-every" placeholder:"K" help:"also print a sample every K steps"`
	SampleTokens int     `arg:"--sample-tokens" default:"64" placeholder:"N" help:"tokens in a sample (0: no sample)"`
	Temperature  float64 `arg:"--temperature" default:"0.8" help:"divide the logits by this before sampling (0: always the most likely token)"`
	TopK         int     `arg:"--top-k" default:"40" placeholder:"K" help:"sample among the K most likely tokens (0: all)"`
	Prompt       string  `arg:"--prompt" placeholder:"TEXT" help:"start the sample from this text [default: the start of the validation split]"`
}
