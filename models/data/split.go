package data

import (
	"encoding/binary"
	"fmt"
)

// split is a run of tokens: bytes of text (width 1) or little-endian uint16
// token ids (width 2, nanoGPT's and llm.c's files), in memory or mapped from
// file, whose first token sits at byte offset base of that file.
type split struct {
	file  string // named in errors
	b     []byte
	width int
	base  int64
}

// len is the number of tokens.
func (s split) len() int { return len(s.b) / s.width }

// at is token i.
func (s split) at(i int) int32 {
	if s.width == 1 {
		return int32(s.b[i])
	}
	return int32(binary.LittleEndian.Uint16(s.b[2*i:]))
}

// sub is tokens [lo, hi).
func (s split) sub(lo, hi int) split {
	return split{file: s.file, b: s.b[lo*s.width : hi*s.width], width: s.width, base: s.base + int64(lo*s.width)}
}

// fill copies tokens start..start+len(in)-1 to in and start+1.. to tgt,
// refusing a token outside a vocabulary of vocab.
func (s split) fill(in, tgt []int32, start, vocab int) error {
	for i := range len(in) + 1 {
		t := s.at(start + i)
		if int(t) >= vocab {
			return s.outside(start+i, t, vocab)
		}
		if i < len(in) {
			in[i] = t
		}
		if i > 0 {
			tgt[i-1] = t
		}
	}
	return nil
}

// check refuses the first token of [lo, hi) outside a vocabulary of vocab.
func (s split) check(lo, hi, vocab int) error {
	for i := lo; i < hi; i++ {
		if t := s.at(i); int(t) >= vocab {
			return s.outside(i, t, vocab)
		}
	}
	return nil
}

func (s split) outside(i int, t int32, vocab int) error {
	return fmt.Errorf("%s: token %d at byte offset %d (token %d of the split) is outside the model's vocabulary of %d: set --vocab to the tokenizer's (GPT-2's is 50257)",
		s.file, t, s.base+int64(i*s.width), i, vocab)
}
