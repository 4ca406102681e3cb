package bench

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/internal/svgtest"
)

var update = flag.Bool("update", false, "rewrite the goldens under testdata")

// scalingGoldens are the pictures under testdata: NAME.json holds the rows,
// NAME.svg the picture drawn from them.
var scalingGoldens = []struct {
	name, title string
	mode        ScalingMode
}{
	{"scaling_weak", "pplaunch bench scaling: gpt 8 layers × 256 wide, one rank per netns host", Weak},
	{"scaling_strong", "pplaunch bench scaling: gpt 8 layers × 256 wide, ranks on one host", Strong},
	{"scaling_one", "pplaunch bench scaling: one rank", Weak},
}

func TestScalingSVGGolden(t *testing.T) {
	for _, g := range scalingGoldens {
		t.Run(g.name, func(t *testing.T) {
			rows := readScalingRows(t, filepath.Join("testdata", g.name+".json"))
			var buf bytes.Buffer
			if err := WriteScalingSVG(&buf, rows, g.title, g.mode); err != nil {
				t.Fatal(err)
			}
			checkXML(t, buf.Bytes())
			path := filepath.Join("testdata", g.name+".svg")
			if *update {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./bench -run ScalingSVG -update to create it)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%s differs from the picture drawn now (rerun with -update if intended)", path)
			}
		})
	}
}

func readScalingRows(t *testing.T, path string) []ScalingRow {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []ScalingRow
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}

// checkXML reads every token of b and fails the test if b is not well-formed
// XML with an svg root.
func checkXML(t *testing.T, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
}

func TestScalingSVGUnsortedAndEscaped(t *testing.T) {
	rows := readScalingRows(t, filepath.Join("testdata", "scaling_weak.json"))
	var sorted, shuffled bytes.Buffer
	title := `a <b> & "c" 'd'`
	if err := WriteScalingSVG(&sorted, rows, title, Weak); err != nil {
		t.Fatal(err)
	}
	mixed := []ScalingRow{rows[2], rows[0], rows[3], rows[1]}
	if err := WriteScalingSVG(&shuffled, mixed, title, Weak); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sorted.Bytes(), shuffled.Bytes()) {
		t.Error("rows out of order draw another picture than sorted rows")
	}
	if mixed[0].World != 4 || mixed[1].World != 1 {
		t.Error("WriteScalingSVG reordered its argument")
	}
	checkXML(t, sorted.Bytes())
	if !strings.Contains(sorted.String(), "a &lt;b&gt; &amp; &#34;c&#34; &#39;d&#39;") {
		t.Error("the title is not escaped")
	}
}

// wideScalingRows are 13 sizes from 1 to 4096 ranks whose tokens/s run from
// 400 to about a million.
func wideScalingRows() []ScalingRow {
	var rows []ScalingRow
	for i := range 13 {
		w := 1 << i
		eff := 1 - 0.03*float64(i)
		step := 2.0 / eff
		rows = append(rows, ScalingRow{
			ScalingSize: ScalingSize{Nodes: max(1, w/8), NProc: min(w, 8), World: w, PP: min(w, 8), DP: max(1, w/8)},
			Schedule:    "1f1b", TokensPerS: 400 * float64(w) * eff,
			StepS: step, PredictedStepS: 0.9 * step, Efficiency: eff,
			ComputeS: 1.6, TransferS: 0.03 * float64(i) * step, IdleS: step - 1.6 - 0.03*float64(i)*step,
		})
	}
	return rows
}

func TestScalingSVGWide(t *testing.T) {
	rows := wideScalingRows()
	for _, mode := range []ScalingMode{Weak, Strong} {
		var buf bytes.Buffer
		if err := WriteScalingSVG(&buf, rows, "wide", mode); err != nil {
			t.Fatal(err)
		}
		checkXML(t, buf.Bytes())
		for _, want := range []string{">4096<", ">8×512<", "M<", string(mode) + " scaling"} {
			if !strings.Contains(buf.String(), want) {
				t.Errorf("%s picture lacks %q", mode, want)
			}
		}
	}
}

func TestScalingSVGErrors(t *testing.T) {
	good := readScalingRows(t, filepath.Join("testdata", "scaling_weak.json"))
	with := func(f func(r *ScalingRow)) []ScalingRow {
		rows := slices.Clone(good)
		f(&rows[2])
		return rows
	}
	for _, c := range []struct {
		name string
		rows []ScalingRow
		mode ScalingMode
		want []string
	}{
		{"no rows", nil, Weak, []string{"no rows"}},
		{"NaN", with(func(r *ScalingRow) { r.TokensPerS = math.NaN() }), Weak, []string{"world 4", "tokens_per_s", "NaN"}},
		{"Inf", with(func(r *ScalingRow) { r.IdleS = math.Inf(1) }), Weak, []string{"world 4", "idle_s", "+Inf"}},
		{"negative", with(func(r *ScalingRow) { r.TransferS = -0.5 }), Weak, []string{"world 4", "transfer_s", "-0.5"}},
		{"negative efficiency", with(func(r *ScalingRow) { r.Efficiency = -1 }), Weak, []string{"world 4", "efficiency"}},
		{"world 0", with(func(r *ScalingRow) { r.World = 0 }), Weak, []string{"world 0", "at least 1"}},
		{"same world twice", with(func(r *ScalingRow) { r.World = 2 }), Weak, []string{"two rows have world 2"}},
		{"unknown mode", good, "sideways", []string{`"sideways"`}},
	} {
		var buf bytes.Buffer
		err := WriteScalingSVG(&buf, c.rows, "t", c.mode)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not name %q", c.name, err, w)
			}
		}
		if buf.Len() != 0 {
			t.Errorf("%s: wrote %d bytes before failing", c.name, buf.Len())
		}
	}
}

// TestScalingSVGRenders renders every golden picture to PNG with
// rsvg-convert (Debian's librsvg2-bin), skipping with the reason where it is
// missing, and checks the PNG decodes at the picture's size; with
// $PPLAUNCH_PNG_DIR the PNGs are left there to look at. The throughput
// panel is log-log, so the ideal (linear in the world) is a straight line:
// its points lie on one line in the picture.
func TestScalingSVGRenders(t *testing.T) {
	for _, g := range scalingGoldens {
		path := filepath.Join("testdata", g.name+".svg")
		svg, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if w, h := svgtest.Render(t, path, svg); w < 900 || h < 400 {
			t.Errorf("%s: PNG %dx%d, want at least 900x400", path, w, h)
		}
	}
	rows := readScalingRows(t, filepath.Join("testdata", "scaling_weak.json"))
	var buf bytes.Buffer
	if err := WriteScalingSVG(&buf, rows, "t", Weak); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`stroke-dasharray="6 4"[^>]*points="([^"]+)"|points="([^"]+)"[^>]*stroke-dasharray="6 4"`).FindSubmatch(buf.Bytes())
	if m == nil {
		t.Fatal("no dashed ideal line")
	}
	pts := string(m[1]) + string(m[2])
	var xs, ys []float64
	for _, p := range strings.Fields(pts) {
		var x, y float64
		if _, err := fmt.Sscanf(p, "%g,%g", &x, &y); err != nil {
			t.Fatalf("point %q: %v", p, err)
		}
		xs, ys = append(xs, x), append(ys, y)
	}
	if len(xs) < 3 {
		t.Fatalf("ideal line %q: too few points to be bent", pts)
	}
	slope := (ys[1] - ys[0]) / (xs[1] - xs[0])
	for i := 2; i < len(xs); i++ {
		if s := (ys[i] - ys[i-1]) / (xs[i] - xs[i-1]); math.Abs(s-slope) > 0.02*math.Abs(slope) {
			t.Errorf("the ideal line bends: slope %.4f then %.4f (points %s)", slope, s, pts)
		}
	}
}
