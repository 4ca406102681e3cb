// Package svgtest is the test helper that renders the project's SVG
// pictures with a common renderer: rsvg-convert (Debian's librsvg2-bin,
// which .ci/run installs). A picture that renders at its own size is one a
// person can open, not only well-formed XML.
//
// It imports the standard library only and is imported by tests only.
package svgtest

import (
	"bytes"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Render renders svg (named name, for messages and the PNG's file name) to
// PNG and checks that the PNG decodes at the width and height the <svg>
// element gives. It skips the test, with the reason, where rsvg-convert is
// not installed, and writes the PNG to $PPLAUNCH_PNG_DIR when set, for a
// person to look at. It returns the PNG's size.
func Render(t testing.TB, name string, svg []byte) (width, height int) {
	t.Helper()
	bin, err := exec.LookPath("rsvg-convert")
	if err != nil {
		t.Skip("rsvg-convert is not installed (Debian: apt-get install librsvg2-bin): the SVG is not rendered")
	}
	dir := os.Getenv("PPLAUNCH_PNG_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	out := filepath.Join(dir, strings.TrimSuffix(filepath.Base(name), ".svg")+".png")
	cmd := exec.Command(bin, "-o", out)
	cmd.Stdin = bytes.NewReader(svg)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rsvg-convert %s: %v\n%s", name, err, b)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatalf("%s: the PNG does not decode: %v", out, err)
	}
	m := regexp.MustCompile(`<svg [^>]*width="(\d+)" height="(\d+)"`).FindSubmatch(svg)
	if m == nil {
		t.Fatalf("%s: no width and height on <svg>", name)
	}
	w, _ := strconv.Atoi(string(m[1]))
	h, _ := strconv.Atoi(string(m[2]))
	if cfg.Width != w || cfg.Height != h {
		t.Errorf("%s: PNG %dx%d, the SVG says %dx%d", name, cfg.Width, cfg.Height, w, h)
	}
	return cfg.Width, cfg.Height
}
