package models

import "github.com/pplaunch/pplaunch/models/tensor"

// Infer runs a forward pass for inference: nothing is kept for a backward
// pass and no micro-batch is left in flight. A stage but the last returns
// its output activation (the caller's, as Forward's); the last stage returns
// the next-token probabilities of every position, [B·T·V] on the host, and
// needs no targets.
func (s *Stage) Infer(in Input) (act *tensor.Tensor, probs []float32, err error) {
	if s.IsLast() && in.Targets == nil {
		n := len(in.Tokens)
		if in.Act != nil {
			n = in.Act.Shape[0] * s.cfg.Seq
		}
		in.Targets = make([]int32, n) // the loss they give is not used
	}
	if _, err := s.checkInput(-1, in); err != nil {
		return nil, nil, err
	}
	al := &alloc{a: s.arena}
	defer al.release()
	tapes, out := s.run(in, al, PassF)
	if !s.IsLast() {
		al.escape(out.Act)
		return out.Act, nil, nil
	}
	p := tapes[len(tapes)-1].(*headTape).probs // CrossEntropy's softmax, in place of the logits
	probs = make([]float32, p.Len())
	s.be.Download(probs, p)
	return nil, probs, nil
}
