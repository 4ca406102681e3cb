package ranks

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/pplaunch/pplaunch/ranks/stageloop"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/tensor"
)

// SampleOptions choose how text is generated from the model.
type SampleOptions struct {
	Tokens      int     // tokens to generate (0: none)
	Temperature float64 // divides the logits (0: always the most likely token)
	TopK        int     // sample among the K most likely tokens (0: all)
	Seed        uint64  // of the sampling RNG, which only the last stage draws from
	Prompt      []int32 // nil: the start of the validation split (Train)
	Every       int     // Train also samples every Every steps (0: only at the end)
}

// Sample is one generated text, on rank 0.
type Sample struct {
	Step   int // after this many optimizer steps
	Prompt []int32
	Tokens []int32
}

// samplePromptLen is how much of the validation split a default prompt takes.
const samplePromptLen = 16

// chunkSample carries sampled tokens to the first stage and to rank 0.
const chunkSample = 0xFFF3

// sampleRNG is the generator every sample draws from: the same seed gives
// the same text whatever the layout, in train and in pplaunch sample.
func sampleRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x73616d706c65)) }

// SampleToken picks the next token from a position's probabilities: with
// temperature T the weights are p^(1/T) (softmax of logits/T), restricted to
// the topK most likely tokens (ties to the lower id; 0: all), and u in
// [0, 1) chooses along their cumulative sum. Temperature 0 (or topK 1)
// takes the most likely token. Pure: the caller's RNG gives u.
func SampleToken(probs []float32, temperature float64, topK int, u float64) int {
	order := make([]int, len(probs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(probs[b], probs[a]) })
	if temperature <= 0 || topK == 1 || len(order) == 1 {
		return order[0]
	}
	if topK > 0 && topK < len(order) {
		order = order[:topK]
	}
	top := math.Log(float64(probs[order[0]]))
	w := make([]float64, len(order))
	var total float64
	for i, id := range order {
		w[i] = math.Exp((math.Log(float64(probs[id])) - top) / temperature) // 0 for p = 0
		total += w[i]
	}
	target, cum := u*total, 0.0
	for i, id := range order {
		cum += w[i]
		if target < cum {
			return id
		}
	}
	for i := len(order) - 1; i > 0; i-- { // u rounded up to the total: the last token with weight
		if w[i] > 0 {
			return order[i]
		}
	}
	return order[0]
}

// Sampler generates through a forward-only pipeline: each rank runs its own
// stages on the whole window of tokens, passing activations on as
// evaluation does; the last stage samples and sends each token back to the
// first. A rank holding every stage needs no communicator.
type Sampler struct {
	Comm      collective.Comm
	Rank      int
	Placement []int                 // stage → world rank
	Stages    map[int]*models.Stage // this rank's
	Timeout   time.Duration
}

// Generate continues prompt by o.Tokens tokens and returns them on rank 0,
// which holds the first stage (nil elsewhere). Every rank of Placement calls it with the same id (which
// tags its messages), prompt and options. The model sees the last Seq
// tokens; a shorter window is padded at the end, which a causal model never
// reads from the positions before it.
func (s *Sampler) Generate(ctx context.Context, id uint32, prompt []int32, o SampleOptions) ([]int32, error) {
	S := len(s.Placement)
	first, last := s.Placement[0], s.Placement[S-1]
	if first != 0 {
		return nil, fmt.Errorf("sample: the first stage is on rank %d: it must be on rank 0, which prints the sample", first)
	}
	if o.Tokens < 1 || !slices.Contains(s.Placement, s.Rank) {
		return nil, nil
	}
	if len(prompt) == 0 {
		return nil, fmt.Errorf("sample: empty prompt")
	}
	cfg := s.Stages[s.mine()].Config()
	seq, vocab := cfg.Seq, cfg.Vocab
	if i := slices.IndexFunc(prompt, func(t int32) bool { return t < 0 || int(t) >= vocab }); i >= 0 {
		return nil, fmt.Errorf("sample: prompt token %d at %d is outside the vocabulary of %d", prompt[i], i, vocab)
	}
	rng := sampleRNG(o.Seed)
	text := slices.Clone(prompt)
	var out []int32
	for i := range o.Tokens {
		window := text[max(0, len(text)-seq):]
		tokens := make([]int32, seq)
		copy(tokens, window)
		// tok is the token sampled; a middle stage's rank only counts it.
		tok, err := s.predict(ctx, id, i, tokens, len(window)-1, vocab, o, rng)
		if err != nil {
			return nil, err
		}
		if s.Rank == first && s.Rank != last {
			v := []float64{0}
			if err := s.xfer(ctx, false, last, id, uint32(i), v); err != nil {
				return nil, err
			}
			tok = int32(v[0])
		}
		text = append(text, tok)
		out = append(out, tok)
	}
	if s.Rank != 0 {
		return nil, nil
	}
	return out, nil // the first stage's rank has every token
}

// predict runs this rank's stages on the window tokens for token i. The last
// stage samples at position pos (over the vocabulary's tokens; the rows are
// padded) and sends the token to the first stage's rank; its rank returns the
// token, the others 0.
func (s *Sampler) predict(ctx context.Context, id uint32, i int, tokens []int32, pos, vocab int, o SampleOptions, rng *rand.Rand) (int32, error) {
	S := len(s.Placement)
	first := s.Placement[0]
	var tok int32
	var act *tensor.Tensor
	for st := range S {
		if s.Placement[st] != s.Rank {
			continue
		}
		stage := s.Stages[st]
		in := models.Input{Tokens: tokens}
		if st > 0 {
			if prev := s.Placement[st-1]; prev != s.Rank {
				var err error
				if act, err = s.recvAct(ctx, id, prev, st, i, stage); err != nil {
					return 0, err
				}
			}
			in = models.Input{Act: act}
		}
		a, probs, err := stage.Infer(in)
		if act != nil {
			stage.Compute().Free(act)
		}
		if err != nil {
			return 0, fmt.Errorf("sample: token %d: %w", i, err)
		}
		act = a
		if st < S-1 {
			if next := s.Placement[st+1]; next != s.Rank {
				if err := s.sendAct(ctx, id, next, st+1, i, stage, act); err != nil {
					return 0, err
				}
				stage.Compute().Free(act)
				act = nil
			}
			continue
		}
		row := positionRow(probs, pos, stage.Config().PaddedVocab(), vocab)
		tok = int32(SampleToken(row, o.Temperature, o.TopK, rng.Float64()))
		if first != s.Rank {
			if err := s.xfer(ctx, true, first, id, uint32(i), []float64{float64(tok)}); err != nil {
				return 0, err
			}
		}
	}
	return tok, nil
}

// mine is one stage this rank holds.
func (s *Sampler) mine() int {
	for st := range s.Placement {
		if s.Stages[st] != nil {
			return st
		}
	}
	return -1
}

func (s *Sampler) xfer(ctx context.Context, send bool, peer int, id, mb uint32, v []float64) error {
	tag := collective.Tag{Kind: collective.Control, Chunk: chunkSample, Step: id, MicroBatch: mb}
	wctx, cancel := stageloop.WaitContext(ctx, s.Timeout)
	defer cancel()
	var err error
	if send {
		err = s.Comm.Send(wctx, peer, tag, collective.F64(v))
	} else {
		err = s.Comm.Recv(wctx, peer, tag, collective.F64(v))
	}
	if err != nil {
		return fmt.Errorf("sample: tokens with rank %d: %w", peer, err)
	}
	return nil
}

func actTag(id uint32, st, i int) collective.Tag {
	return collective.Tag{Kind: collective.Control, Chunk: uint16(st), Step: id, MicroBatch: 1<<30 | uint32(i)}
}

func (s *Sampler) sendAct(ctx context.Context, id uint32, peer, st, i int, stage *models.Stage, act *tensor.Tensor) error {
	host := make([]float32, act.Len())
	stage.Compute().Download(host, act)
	wctx, cancel := stageloop.WaitContext(ctx, s.Timeout)
	defer cancel()
	if err := s.Comm.Send(wctx, peer, actTag(id, st, i), collective.F32(host, act.Shape...)); err != nil {
		return fmt.Errorf("sample: token %d: activation of stage %d to rank %d: %w", i, st, peer, err)
	}
	return nil
}

func (s *Sampler) recvAct(ctx context.Context, id uint32, peer, st, i int, stage *models.Stage) (*tensor.Tensor, error) {
	shape := stage.ActShape(1)
	host := make([]float32, shape[0]*shape[1]*shape[2])
	wctx, cancel := stageloop.WaitContext(ctx, s.Timeout)
	defer cancel()
	if err := s.Comm.Recv(wctx, peer, actTag(id, st, i), collective.F32(host, shape...)); err != nil {
		return nil, fmt.Errorf("sample: token %d: activation of stage %d from rank %d: %w", i, st, peer, err)
	}
	t := stage.Compute().AllocAs(stage.ActDType(), shape...) // bfloat16 values round exactly
	stage.Compute().Upload(t, host)
	return t, nil
}

// positionRow is position pos's probabilities over the vocabulary's tokens:
// the rows of probs are padded (the model holds the vocabulary rounded up to a
// multiple of 64), and the padding columns, which no token is, are left out.
func positionRow(probs []float32, pos, padded, vocab int) []float32 {
	return probs[pos*padded : pos*padded+vocab]
}
