package tensor

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// The exact GELU against float64 x·Φ(x), and its backward against a central
// difference of the forward in float64.
func TestGeluExact(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	be := gonumCPU()
	n := 3000
	x, dy := randTensor(r, n), randTensor(r, n)
	for i := range x.Data {
		x.Data[i] *= 4
	}
	y, cdf, dx := New(n), New(n), New(n)
	be.GeluExact(y, cdf, x)
	be.GeluExactBackward(dx, dy, x, cdf)
	exact := func(v float64) float64 { return v * 0.5 * (1 + math.Erf(v/math.Sqrt2)) }
	for i, v := range x.Data {
		w := float64(v)
		if got, want := float64(y.Data[i]), exact(w); math.Abs(got-want) > 2e-7*(1+math.Abs(want)) {
			t.Fatalf("gelu exact(%v) = %v, want %v", v, got, want)
		}
		h := 1e-4
		d := (exact(w+h) - exact(w-h)) / (2 * h)
		if got, want := float64(dx.Data[i]), float64(dy.Data[i])*d; math.Abs(got-want) > 1e-5*(1+math.Abs(want)) {
			t.Fatalf("gelu exact backward at %v: %v, want %v", v, got, want)
		}
	}
	// The two forms differ (by up to about 5e-4 near |x| = 2): a test that
	// cannot tell them apart proves nothing about which one ran.
	yt, th := New(n), New(n)
	be.Gelu(yt, th, x)
	var most float64
	for i := range y.Data {
		most = math.Max(most, math.Abs(float64(y.Data[i]-yt.Data[i])))
	}
	if most < 1e-4 {
		t.Fatalf("exact and tanh GELU differ by at most %g", most)
	}
}

// A cross-entropy over the first valid of V columns equals the one over a
// V=valid matrix, gives the padding columns probability 0 and so no gradient.
func TestCrossEntropyMasksPadding(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	for _, be := range backends(t) {
		const n, valid, V = 5, 7, 16
		logits := randTensor(r, n, V)
		for i := range n {
			for j := valid; j < V; j++ {
				logits.Data[i*V+j] = 30 // large: unmasked, they would take all the probability
			}
		}
		narrow := New(n, valid)
		for i := range n {
			copy(narrow.Data[i*valid:(i+1)*valid], logits.Data[i*V:i*V+valid])
		}
		targets := []int32{0, 6, 3, 3, 1}
		probs, np := New(n, V), New(n, valid)
		loss := be.CrossEntropy(probs, logits, targets, valid)
		want := be.CrossEntropy(np, narrow, targets, 0)
		if loss != want {
			t.Fatalf("%s: masked loss %v, want %v (the loss over the vocabulary columns alone)", be.Name(), loss, want)
		}
		dl := New(n, V)
		be.CrossEntropyBackward(dl, probs, targets, 1)
		for i := range n {
			for j := range V {
				p, g := probs.Data[i*V+j], dl.Data[i*V+j]
				if j >= valid && (p != 0 || g != 0) {
					t.Fatalf("%s: padding column %d of row %d: p %v, gradient %v", be.Name(), j, i, p, g)
				}
				if j < valid && p != np.Data[i*valid+j] {
					t.Fatalf("%s: p[%d,%d] = %v, want %v", be.Name(), i, j, p, np.Data[i*valid+j])
				}
			}
		}
		for _, bad := range []struct {
			targets []int32
			valid   int
			msg     string
		}{
			{[]int32{0, 7, 0, 0, 0}, valid, "target 7 at 1 outside vocabulary of 7"},
			{targets, V + 1, "17 vocabulary columns of 16"},
			{targets, -1, "-1 vocabulary columns"},
		} {
			func() {
				defer func() {
					if p := recover(); p == nil || !strings.Contains(p.(string), bad.msg) {
						t.Errorf("%s: valid %d targets %v: panic %v, want %q", be.Name(), bad.valid, bad.targets, p, bad.msg)
					}
				}()
				be.CrossEntropy(New(n, V), logits, bad.targets, bad.valid)
			}()
		}
	}
}
