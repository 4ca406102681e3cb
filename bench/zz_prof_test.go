package bench

import (
	"os"
	"runtime/pprof"
	"testing"

	"github.com/pplaunch/pplaunch/models"
)

func TestZZProf(t *testing.T) {
	cfg := models.Config{Kind: "gpt", Vocab: 256, Layers: 1, Width: 768, Heads: 12, Seq: 256}
	f, _ := os.Create(os.Getenv("ZZ_OUT"))
	pprof.StartCPUProfile(f)
	_, err := Step(StepOptions{Model: cfg, Batch: 4, Threads: 1, Steps: 3, Warmup: 1, BLAS: os.Getenv("ZZ_BLAS"), Seed: 1, Device: "cpu"})
	pprof.StopCPUProfile()
	if err != nil { t.Fatal(err) }
}
