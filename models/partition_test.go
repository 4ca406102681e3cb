package models

import (
	"slices"
	"strings"
	"testing"
)

func TestPartition(t *testing.T) {
	gpt := Config{Kind: "gpt", Vocab: 256, Layers: 8, Width: 64, Heads: 4, Seq: 64}
	big := gpt
	big.Vocab, big.Layers = 50000, 4 // a heavy embedding and head
	for _, c := range []struct {
		cfg    Config
		stages int
		method string
		want   []int
	}{
		{gpt, 1, BalanceUniform, []int{8}},
		{gpt, 4, BalanceUniform, []int{2, 2, 2, 2}},
		{gpt, 3, BalanceUniform, []int{2, 3, 3}},
		{gpt, 8, BalanceFLOPs, []int{1, 1, 1, 1, 1, 1, 1, 1}},
		{gpt, 2, BalanceFLOPs, []int{4, 4}},
		// A large vocabulary's head FLOPs weigh on the last stage.
		{big, 2, BalanceFLOPs, []int{3, 1}},
		// The embedding and head hold most parameters: the end stages get one block.
		{big, 3, BalanceParams, []int{1, 2, 1}},
	} {
		got, err := Partition(c.cfg, c.stages, c.method)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%v into %d by %s: %v, want %v", c.cfg, c.stages, c.method, got, c.want)
		}
	}
}

func TestPartitionErrors(t *testing.T) {
	cfg := Config{Kind: "gpt", Vocab: 256, Layers: 4, Width: 64, Heads: 4, Seq: 64}
	for _, c := range []struct {
		stages int
		method string
		want   string
	}{
		{5, BalanceUniform, "cut 4 layers into 5 stages: more stages than layers: use --layers 5 or more, or at most 4 stages"},
		{0, BalanceUniform, "want at least 1"},
		{2, "random", `balance "random"`},
	} {
		if _, err := Partition(cfg, c.stages, c.method); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Partition(%d, %s): %v, want %q", c.stages, c.method, err, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"3,3,2,2", ""},
		{"3, 1", ""},
		{"3,3", "adds up to 6, but the model has 4 layers"},
		{"2,x", `entry 1 "x" is not a number`},
		{"4,0", "stage 1 has 0 layers"},
	} {
		layers := 4
		if c.in == "3,3,2,2" {
			layers = 10
		}
		_, err := ParseLayersPerStage(c.in, layers)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("ParseLayersPerStage(%q): %v, want %q", c.in, err, c.want)
		}
	}
}

func TestConfigAndPresets(t *testing.T) {
	for _, name := range PresetNames() {
		c, err := Preset(name)
		if err != nil || c.Validate() != nil {
			t.Fatalf("preset %s: %v %v", name, err, c.Validate())
		}
	}
	if _, err := Preset("gpt-huge"); err == nil || !strings.Contains(err.Error(), "gpt-small") {
		t.Fatalf("unknown preset: %v", err)
	}
	c, _ := Preset("gpt-small")
	// GPT-2 block: 12·D² + 13·D parameters (weights and biases, two LayerNorms).
	D := int64(c.Width)
	want := int64(c.Vocab)*D + int64(c.Seq)*D + int64(c.Layers)*(12*D*D+13*D) + 2*D + int64(c.Vocab)*D
	if got := c.NumParams(); got != want {
		t.Fatalf("gpt-small has %d parameters, want %d", got, want)
	}
	c.Tied = true
	if got := c.NumParams(); got != want-int64(c.Vocab)*D {
		t.Fatalf("tied gpt-small has %d parameters, want %d", got, want-int64(c.Vocab)*D)
	}
	bad := c
	bad.Heads = 3
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "not divisible by 3 heads") {
		t.Fatalf("width 256 with 3 heads: %v", err)
	}
}

// FuzzParseLayersPerStage: any string either parses into positive counts that
// add up to the model's layers, or is refused with an error.
func FuzzParseLayersPerStage(f *testing.F) {
	for _, s := range []string{"3,3,2,2", "1", "", ",", "4,-1", " 2 , 2", "9999999999999999999", "1,,1"} {
		f.Add(s, 4)
	}
	f.Fuzz(func(t *testing.T, s string, layers int) {
		cut, err := ParseLayersPerStage(s, layers)
		if err != nil {
			return
		}
		total := 0
		for _, n := range cut {
			if n < 1 {
				t.Fatalf("%q: stage with %d layers accepted", s, n)
			}
			total += n
		}
		if total != layers {
			t.Fatalf("%q: adds up to %d, accepted for %d layers", s, total, layers)
		}
	})
}
