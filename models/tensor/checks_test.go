package tensor

import (
	"fmt"
	"strings"
	"testing"
)

// panicOf runs f and returns what it panicked with, or "" when it did not.
func panicOf(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

// badCalls are operations given one wrong operand each, with the words the
// refusal must hold (the operation and the operand). Every call fails in a
// <family>_check.go function before any work, so nothing reaches a kernel.
var badCalls = []struct {
	name string
	want string
	call func(be Backend)
}{
	{"linear y", "linear: y has 6 elements", func(be Backend) {
		be.Linear(be.Zeros(2, 3), be.Zeros(2, 4), be.Zeros(5, 4), nil, nil)
	}},
	{"linear weight", "linear weight: shape [5 3]", func(be Backend) {
		be.Linear(be.Zeros(2, 5), be.Zeros(2, 4), be.Zeros(5, 3), nil, nil)
	}},
	{"linear bias", "linear: bias has 3 elements", func(be Backend) {
		be.Linear(be.Zeros(4, 2), be.Zeros(4, 3), be.Zeros(2, 3), be.Zeros(3), nil)
	}},
	{"linear residual", "linear: residual has 2 elements", func(be Backend) {
		be.Linear(be.Zeros(4, 2), be.Zeros(4, 3), be.Zeros(2, 3), nil, be.Zeros(2))
	}},
	{"linear w", "linear: w has shape [6]", func(be Backend) {
		be.Linear(be.Zeros(4, 2), be.Zeros(4, 3), be.Zeros(6), nil, nil)
	}},
	{"linear backward input dx", "linear backward input: dx has 3 elements", func(be Backend) {
		be.LinearBackwardInput(be.Zeros(3), be.Zeros(2, 5), be.Zeros(5, 4))
	}},
	{"linear backward weight dbias", "linear backward weight: dbias has 4 elements", func(be Backend) {
		be.LinearBackwardWeight(be.Zeros(5, 4), be.Zeros(4), be.Zeros(2, 5), be.Zeros(2, 4))
	}},
	{"matmul", "matmul: op(a) 2x3, op(b) 4x2", func(be Backend) {
		be.MatMul(be.Zeros(2, 2), be.Zeros(2, 3), false, be.Zeros(4, 2), false, 1, 0)
	}},
	{"layernorm beta", "layernorm: beta has 3 elements", func(be Backend) {
		be.LayerNorm(be.Zeros(2, 4), be.Zeros(2), be.Zeros(2), be.Zeros(2, 4), be.Zeros(4), be.Zeros(3), 1e-5)
	}},
	{"layernorm backward rstd", "layernorm backward: rstd has 3 elements", func(be Backend) {
		be.LayerNormBackwardInput(be.Zeros(2, 4), be.Zeros(2, 4), be.Zeros(2, 4), be.Zeros(2), be.Zeros(3), be.Zeros(4))
	}},
	{"layernorm backward weight dbeta", "layernorm backward weight: dbeta has 5 elements", func(be Backend) {
		be.LayerNormBackwardWeight(be.Zeros(4), be.Zeros(5), be.Zeros(2, 4), be.Zeros(2, 4), be.Zeros(2), be.Zeros(2))
	}},
	{"gelu th", "gelu: th has 3 elements", func(be Backend) { be.Gelu(be.Zeros(4), be.Zeros(3), be.Zeros(4)) }},
	{"gelu backward th", "gelu backward: th has 2 elements", func(be Backend) {
		be.GeluBackward(be.Zeros(4), be.Zeros(4), be.Zeros(4), be.Zeros(2))
	}},
	{"gelu exact backward cdf", "gelu exact backward: cdf has 5 elements", func(be Backend) {
		be.GeluExactBackward(be.Zeros(4), be.Zeros(4), be.Zeros(4), be.Zeros(5))
	}},
	{"add b", "add: b has 3 elements", func(be Backend) { be.Add(be.Zeros(4), be.Zeros(4), be.Zeros(3)) }},
	{"attention heads", "attention: width 4 not divisible by 3 heads", func(be Backend) {
		be.Attention(be.Zeros(1, 2, 4), be.Zeros(1, 3, 2, 2), be.Zeros(1, 2, 12), 3)
	}},
	{"attention probs", "attention: shape [1 2 3 2]", func(be Backend) {
		be.Attention(be.Zeros(1, 3, 4), be.Zeros(1, 2, 3, 2), be.Zeros(1, 3, 12), 2)
	}},
	{"attention backward dqkv", "attention backward: dqkv has 12 elements", func(be Backend) {
		be.AttentionBackward(be.Zeros(1, 3, 4), be.Zeros(1, 3, 4), be.Zeros(1, 3, 12), be.Zeros(1, 2, 3, 3), 2)
	}},
	{"flash attention heads", "flash attention: width 4 not divisible by 3 heads", func(be Backend) {
		be.FlashAttention(be.Zeros(1, 3, 4), be.Zeros(1, 3, 3), be.Zeros(1, 3, 12), 3)
	}},
	{"flash attention backward out", "flash attention backward: out has 4 elements", func(be Backend) {
		be.FlashAttentionBackward(be.Zeros(1, 3, 12), be.Zeros(1, 3, 4), be.Zeros(1, 3, 12), be.Zeros(4), be.Zeros(1, 2, 3), 2)
	}},
	{"embed token", "embed: token 7 at 1 outside vocabulary of 5", func(be Backend) {
		be.Embed(be.Zeros(2, 3), be.Zeros(5, 3), nil, []int32{1, 7})
	}},
	{"embed positions", "embed: position table [1 3], want at least [2 3]", func(be Backend) {
		be.Embed(be.Zeros(1, 2, 3), be.Zeros(5, 3), be.Zeros(1, 3), []int32{1, 2})
	}},
	{"embed backward token", "embed backward: token -1 at 0 outside vocabulary of 5", func(be Backend) {
		be.EmbedBackward(be.Zeros(5, 3), nil, be.Zeros(2, 3), []int32{-1, 2})
	}},
	{"embed backward position table", "embed backward: position table [1 3], want at least [2 3]", func(be Backend) {
		be.EmbedBackward(be.Zeros(5, 3), be.Zeros(1, 3), be.Zeros(2, 3), []int32{1, 2})
	}},
	{"cross entropy targets", "cross entropy: 1 targets for 2 rows", func(be Backend) {
		be.CrossEntropy(be.Zeros(2, 5), be.Zeros(2, 5), []int32{0}, 0)
	}},
	{"cross entropy valid", "cross entropy: target 4 at 1 outside vocabulary of 3", func(be Backend) {
		be.CrossEntropy(be.Zeros(2, 5), be.Zeros(2, 5), []int32{0, 4}, 3)
	}},
	{"cross entropy backward targets", "cross entropy backward: 1 targets for 2 rows", func(be Backend) {
		be.CrossEntropyBackward(be.Zeros(2, 3), be.Zeros(2, 3), []int32{0}, 1)
	}},
	{"cross entropy backward dlogits", "cross entropy backward: dlogits has 9 elements", func(be Backend) {
		be.CrossEntropyBackward(be.Zeros(3, 3), be.Zeros(2, 5), []int32{0, 1}, 1)
	}},
	{"adamw v", "adamw: v has 3 elements", func(be Backend) {
		be.AdamW(be.Zeros(4), be.Zeros(4), be.Zeros(4), be.Zeros(3), AdamWStep{})
	}},
	{"sgd momentum", "sgd: momentum has 5 elements", func(be Backend) {
		be.SGD(be.Zeros(4), be.Zeros(4), be.Zeros(5), SGDStep{})
	}},
	{"upload", "upload: 3 values into [4] (4 elements)", func(be Backend) { be.Upload(be.Zeros(4), make([]float32, 3)) }},
	{"download", "download: [4] (4 elements) into 5 values", func(be Backend) { be.Download(make([]float32, 5), be.Zeros(4)) }},
	{"copy", "copy: src has 3 elements", func(be Backend) { be.Copy(be.Zeros(4), be.Zeros(3)) }},
}

// TestOperationsRefuseBadShapes: an operand of the wrong size is a panic that
// names the operation and the operand, never a silent out-of-bounds result.
func TestOperationsRefuseBadShapes(t *testing.T) {
	be := gonumCPU()
	for _, c := range badCalls {
		t.Run(c.name, func(t *testing.T) {
			if got := panicOf(func() { c.call(be) }); !strings.Contains(got, c.want) {
				t.Fatalf("panic %q, want it to contain %q", got, c.want)
			}
		})
	}
}

// TestBackendsRefuseTheSameOperands: each op family's checks are written
// once and called by both backends, so a wrong operand gets the same panic,
// word for word, from the CPU backend and the CUDA backend (over the
// emulator): the operation and the operand named.
func TestBackendsRefuseTheSameOperands(t *testing.T) {
	cpu := gonumCPU()
	gpu := emuCUDA(t)
	for _, c := range badCalls {
		t.Run(c.name, func(t *testing.T) {
			got := panicOf(func() { c.call(cpu) })
			if g := panicOf(func() { c.call(gpu) }); g != got || got == "" {
				t.Errorf("CUDA: panic %q, CPU %q: the backends should refuse alike", g, got)
			}
		})
	}
}
