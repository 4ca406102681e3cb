package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/tensor"
)

// ExplainStep is `bench step --device cuda --explain`'s prediction: the
// roofline of one step of cfg at precision on the H200, attention fused
// where the CUDA backend fuses it, and the rooflines at the other
// precisions beside it. An error is a shape the roofline does not take.
func ExplainStep(cfg models.Config, batch int, precision string) (Roofline, []Roofline, error) {
	hd := cfg.Width / max(cfg.Heads, 1)
	fused := hd >= tensor.FlashMinHead && hd <= tensor.FlashMaxHead // the CUDA backend's FusedAttention
	r, err := Explain(cfg, batch, precision, fused, H200)
	if err != nil {
		return r, nil, err
	}
	var also []Roofline
	for _, p := range Precisions {
		if p != precision {
			o, _ := Explain(cfg, batch, p, fused, H200) // the shape was accepted above
			also = append(also, o)
		}
	}
	return r, also, nil
}

// Measure is r with the step o measured beside it (Step), or where the
// device does not open, with the word that nothing ran and why.
func (r Roofline) Measure(o StepOptions) (Roofline, error) {
	rep, err := Step(o)
	var de *DeviceError
	switch {
	case errors.As(err, &de):
		return r.WithMeasured(0, de.Error()), nil
	case err != nil:
		return r, err
	}
	return r.WithMeasured(rep.StepMS/1e3, fmt.Sprintf("%s, median of %d steps", rep.Backend, rep.Steps)), nil
}

// WriteExplainJSON writes r and the rooflines at the other precisions as
// one indented JSON object.
func WriteExplainJSON(w io.Writer, r Roofline, also []Roofline) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Roofline Roofline   `json:"roofline"`
		Also     []Roofline `json:"other_precisions"`
	}{r, also})
}
