package bench

import (
	"fmt"

	"github.com/pplaunch/pplaunch/models"
)

// Peaks are a device's roofline ceilings: HBM bandwidth in bytes/s and dense
// peaks in FLOP/s of its tensor cores (bf16, tf32) and CUDA cores (fp32).
type Peaks struct {
	Name string  `json:"name"`
	HBM  float64 `json:"hbm_bytes_per_s"`
	BF16 float64 `json:"bf16_flops"`
	TF32 float64 `json:"tf32_flops"`
	FP32 float64 `json:"fp32_flops"`
}

// H200 is the NVIDIA H200 SXM: 4.8 TB/s of HBM3e (NVIDIA's product
// specifications); the tensor and CUDA cores are the H100 SXM's (the same
// GH100 die and clocks): 989.4 TFLOP/s dense bf16, 494.7 tf32, 66.9 fp32
// (NVIDIA's H100 datasheet and whitepaper, without sparsity).
var H200 = Peaks{Name: "NVIDIA H200 SXM", HBM: 4.8e12, BF16: 989e12, TF32: 495e12, FP32: 67e12}

// Precisions a step's roofline is computed for: fp32 (float32 products on
// CUDA cores), tf32 (float32 storage, TF32 tensor-core products), bf16
// (bf16 activations and products, float32 statistics and master weights).
var Precisions = []string{"fp32", "tf32", "bf16"}

// gemmPeak is the peak the matrix products of a precision run at.
func (p Peaks) gemmPeak(precision string) (float64, string) {
	switch precision {
	case "bf16":
		return p.BF16, "bf16 tensor"
	case "tf32":
		return p.TF32, "tf32 tensor"
	}
	return p.FP32, "fp32"
}

// Work is one kernel family's FLOPs and HBM bytes per step (forward,
// backward and update) and the time they imply at its peak: the larger of
// the compute and the memory time.
type Work struct {
	Family   string  `json:"family"`
	FLOPs    float64 `json:"flops"`
	Bytes    float64 `json:"bytes"`
	Peak     string  `json:"peak"` // which compute peak bounds it
	ComputeS float64 `json:"compute_s"`
	MemoryS  float64 `json:"memory_s"`
	S        float64 `json:"roofline_s"`
}

// Bound is "memory" or "compute", whichever takes longer.
func (w Work) Bound() string {
	if w.MemoryS >= w.ComputeS {
		return "memory"
	}
	return "compute"
}

// Roofline is a step's prediction at a device's peaks, each kernel family at
// its own roofline one after the other (no overlap): a lower bound on the
// step of the kernels as they are.
type Roofline struct {
	Peaks          Peaks         `json:"peaks"`
	Precision      string        `json:"precision"`
	Model          models.Config `json:"model"`
	Batch          int           `json:"batch"`
	FusedAttention bool          `json:"fused_attention"`
	Families       []Work        `json:"families"`
	S              float64       `json:"roofline_s"`
	ModelFLOPs     float64       `json:"model_flops"`     // models.Config.StepFLOPs
	GEMMPeak       float64       `json:"gemm_peak_flops"` // the products' peak, what MFU is of
	MFU            float64       `json:"mfu"`             // of the predicted step, at the products' peak
	MeasuredS      float64       `json:"measured_s,omitempty"`
	MeasuredMFU    float64       `json:"measured_mfu,omitempty"`
	Measured       string        `json:"measured"` // what ran, or why nothing ran on a GPU
}

// Explain is the roofline of one training step of cfg over batch sequences
// at a precision; fused says whether attention is the fused kernel (the
// CUDA backend's choice for heads 32..128 wide) or the unfused products.
func Explain(cfg models.Config, batch int, precision string, fused bool, p Peaks) (Roofline, error) {
	if cfg.Kind != "gpt" {
		return Roofline{}, fmt.Errorf("explain: model kind %q: the roofline models the gpt kind", cfg.Kind)
	}
	if batch < 1 {
		return Roofline{}, fmt.Errorf("explain: batch %d: want 1 or more", batch)
	}
	gp, gname := p.gemmPeak(precision)
	if precision != "fp32" && gname == "fp32" {
		return Roofline{}, fmt.Errorf("explain: precision %q: want fp32, tf32 or bf16", precision)
	}
	s := stepShape(cfg, batch, precision)
	r := Roofline{Peaks: p, Precision: precision, Model: cfg, Batch: batch, FusedAttention: fused,
		ModelFLOPs: cfg.StepFLOPs(batch), GEMMPeak: gp}
	attPeak, attName := p.FP32, "fp32" // the fused kernels compute on CUDA cores
	if !fused {
		attPeak, attName = gp, gname // cuBLAS products around a softmax kernel
	}
	for _, w := range []struct {
		work
		peak float64
		name string
	}{
		{s.gemms(), gp, gname}, {s.attention(fused), attPeak, attName}, {s.layerNorm(), p.FP32, "fp32"},
		{s.gelu(), p.FP32, "fp32"}, {s.crossEntropy(), p.FP32, "fp32"}, {s.residual(), p.FP32, "fp32"},
		{s.adamW(), p.FP32, "fp32"}, {s.embedding(), p.FP32, "fp32"},
	} {
		f := Work{Family: w.family, FLOPs: w.flops, Bytes: w.bytes, Peak: w.name, ComputeS: w.flops / w.peak, MemoryS: w.bytes / p.HBM}
		f.S = max(f.ComputeS, f.MemoryS)
		r.Families = append(r.Families, f)
		r.S += f.S
	}
	r.MFU = r.ModelFLOPs / r.S / gp
	return r, nil
}

// WithMeasured adds a step measured on the device (seconds; 0 where nothing
// ran) and says what ran, or why nothing did.
func (r Roofline) WithMeasured(stepS float64, what string) Roofline {
	r.MeasuredS, r.Measured = stepS, what
	if stepS > 0 {
		r.MeasuredMFU = r.ModelFLOPs / stepS / r.GEMMPeak
	}
	return r
}
