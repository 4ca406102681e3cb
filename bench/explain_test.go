package bench

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/models"
)

// explainTiny is small enough to count by hand: N = 4 tokens, D = 64, two
// heads of 32, one block, vocabulary 64.
var explainTiny = models.Config{Kind: "gpt", Vocab: 64, Layers: 1, Width: 64, Heads: 2, Seq: 4}

// TestExplainCounts: the per-family counts of the tiny model, worked out by
// hand from the formulas' comments.
func TestExplainCounts(t *testing.T) {
	s := stepShape(explainTiny, 1, "fp32")
	bf := stepShape(explainTiny, 1, "bf16")
	for _, c := range []struct {
		name       string
		got        work
		flops, byt float64
	}{
		// 6·N·Σ in·out over (64,192), (64,64), (64,256), (256,64) and the head (64,64).
		{"gemms flops", s.gemms(), 6 * 4 * (12288 + 4096 + 16384 + 16384 + 4096), -1},
		// 2 heads · 10 causal pairs · hd 32 · 2 · 9 products.
		{"fused attention", s.attention(true), 2 * 10 * 32 * 2 * 9, -1},
		// 2 heads · 16 scores · 32 · 2 · 6 products; 44 bytes a score plus q, k, v twice and out, dout, dqkv's q part.
		{"unfused attention", s.attention(false), 2 * 16 * 32 * 2 * 6, 2*16*44 + 2*3*4*64*4 + 3*4*64*4},
		// 3 LayerNorms over 4×64: 20 FLOPs and 7 activation reads or writes an element, 2 statistics a row twice.
		{"layernorm", s.layerNorm(), 20 * 3 * 256, 3*256*4*7 + 2*3*4*2*4},
		{"gelu", s.gelu(), 30 * 1024, 1024 * 4 * 7},
		{"gelu bf16", bf.gelu(), 30 * 1024, 1024 * 2 * 7},
		{"cross-entropy", s.crossEntropy(), 7 * 4 * 64, 4 * 4 * 64 * 4},
		{"residual", s.residual(), 2 * 256, 3 * 2 * 256 * 4},
		{"adamw", s.adamW(), 14 * float64(explainTiny.NumParams()), 32 * float64(explainTiny.NumParams())},
		{"adamw bf16", bf.adamW(), 14 * float64(explainTiny.NumParams()), 34 * float64(explainTiny.NumParams())},
		{"embedding", s.embedding(), 2 * 256, 256*(4+4+4) + 256*4 + (64+4)*64*4},
	} {
		if c.got.flops != c.flops || (c.byt >= 0 && c.got.bytes != c.byt) {
			t.Errorf("%s: %v FLOPs, %v bytes; want %v, %v", c.name, c.got.flops, c.got.bytes, c.flops, c.byt)
		}
	}
}

// TestExplainRoofline: each family takes the larger of its compute and
// memory times, the step their sum; MFU is the model's FLOPs over that at
// the products' peak; bf16 is faster than tf32, tf32 than fp32; the fused
// attention moves far fewer bytes than the unfused at T=1024.
func TestExplainRoofline(t *testing.T) {
	gpt2 := models.Config{Kind: "gpt", Vocab: 50304, Layers: 12, Width: 768, Heads: 12, Seq: 1024, Tied: true}
	var prev float64 = math.Inf(1)
	for _, p := range Precisions {
		r, err := Explain(gpt2, 8, p, true, H200)
		if err != nil {
			t.Fatal(err)
		}
		var sum float64
		for _, f := range r.Families {
			if f.S != max(f.ComputeS, f.MemoryS) || f.ComputeS <= 0 || f.MemoryS <= 0 {
				t.Fatalf("%s %s: %+v", p, f.Family, f)
			}
			sum += f.S
		}
		if math.Abs(sum-r.S) > 1e-12 || math.Abs(r.MFU-r.ModelFLOPs/r.S/r.GEMMPeak) > 1e-12 || r.S >= prev {
			t.Fatalf("%s: step %v (families %v, previous precision %v), MFU %v", p, r.S, sum, prev, r.MFU)
		}
		prev = r.S
	}
	f, _ := Explain(gpt2, 8, "tf32", true, H200)
	u, _ := Explain(gpt2, 8, "tf32", false, H200)
	if fb, ub := f.Families[1].Bytes, u.Families[1].Bytes; f.Families[1].Family != "attention" || ub < 10*fb {
		t.Fatalf("attention bytes: fused %v, unfused %v", fb, ub)
	}
	m := f.WithMeasured(2*f.S, "test")
	if math.Abs(m.MeasuredMFU-f.MFU/2) > 1e-12 {
		t.Fatalf("measured MFU %v at twice the roofline, want %v", m.MeasuredMFU, f.MFU/2)
	}
	for _, bad := range []struct {
		cfg       models.Config
		batch     int
		precision string
	}{{explainTiny, 0, "fp32"}, {explainTiny, 1, "fp16"}, {models.Config{Kind: "mlp", Vocab: 64, Layers: 1, Width: 8, Seq: 4}, 1, "fp32"}} {
		if _, err := Explain(bad.cfg, bad.batch, bad.precision, true, H200); err == nil {
			t.Errorf("Explain(%v, %d, %s) gave no error", bad.cfg.Kind, bad.batch, bad.precision)
		}
	}
}

// TestExplainGolden: the text of the GPT-2-124M step at B=8 in tf32 with
// nothing run, and of gpt-small's with a step measured (go test ./bench -run
// ExplainGolden -update rewrites them).
func TestExplainGolden(t *testing.T) {
	gpt2 := models.Config{Kind: "gpt", Vocab: 50304, Layers: 12, Width: 768, Heads: 12, Seq: 1024, Tied: true}
	small := models.Config{Kind: "gpt", Vocab: 256, Layers: 4, Width: 256, Heads: 4, Seq: 128}
	for _, c := range []struct {
		file      string
		cfg       models.Config
		measuredS float64
	}{{"explain_gpt2_b8.txt", gpt2, 0}, {"explain_small_measured.txt", small, 2e-3}} {
		r, err := Explain(c.cfg, 8, "tf32", true, H200)
		if err != nil {
			t.Fatal(err)
		}
		what := "no GPU in this test"
		if c.measuredS > 0 {
			what = "a measurement made up for this test"
		}
		r = r.WithMeasured(c.measuredS, what)
		var also []Roofline
		for _, p := range []string{"fp32", "bf16"} {
			o, _ := Explain(c.cfg, 8, p, true, H200)
			also = append(also, o)
		}
		var b bytes.Buffer
		if err := r.WriteText(&b, also); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", c.file)
		if *update {
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./bench -run ExplainGolden -update to create it)", err)
		}
		if b.String() != string(want) {
			t.Fatalf("%s differs:\n%s\nwant:\n%s", c.file, b.String(), want)
		}
		if c.measuredS == 0 && !strings.Contains(b.String(), "nothing ran on a GPU") {
			t.Fatalf("%s: no word that nothing ran", c.file)
		}
	}
}
