package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func sample() []Tensor {
	return []Tensor{
		FromFloat32("w", []int{2, 3}, []float32{1, -2, 3.5, 0, float32(math.Inf(1)), -0.25}),
		FromInt32("ids", []int{3}, []int32{-1, 0, 7}),
		FromFloat64("scale", []int{}, []float64{math.Pi}),
		FromInt64("step", []int{1}, []int64{1 << 40}),
		{Name: "empty", DType: F32, Shape: []int{0, 4}, Data: []byte{}},
		{Name: "half", DType: F16, Shape: []int{2}, Data: []byte{0x00, 0x3c, 0x00, 0xc0}}, // 1, -2
	}
}

func TestRoundTrip(t *testing.T) {
	meta := map[string]string{"format": "pt", "step": "12"}
	b, err := Marshal(sample(), meta)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b)
	if n%8 != 0 {
		t.Fatalf("header length %d not a multiple of 8", n)
	}
	f, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Metadata["format"] != "pt" || f.Metadata["step"] != "12" || len(f.Metadata) != 2 {
		t.Fatalf("metadata %v", f.Metadata)
	}
	var names []string
	for _, x := range f.Tensors {
		names = append(names, x.Name)
	}
	if want := []string{"empty", "half", "ids", "scale", "step", "w"}; !slices.Equal(names, want) {
		t.Fatalf("names %v, want %v", names, want)
	}
	for _, want := range sample() {
		got, ok := f.Get(want.Name)
		if !ok {
			t.Fatalf("missing %q", want.Name)
		}
		if got.DType != want.DType || !slices.Equal(got.Shape, want.Shape) || string(got.Data) != string(want.Data) {
			t.Errorf("%q: got %s %v %x, want %s %v %x", want.Name, got.DType, got.Shape, got.Data, want.DType, want.Shape, want.Data)
		}
	}
	// Every tensor is aligned to its element size within the file.
	var h map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &h); err != nil {
		t.Fatal(err)
	}
	for name, raw := range h {
		if name == "__metadata__" {
			continue
		}
		var info tensorInfo
		if err := json.Unmarshal(raw, &info); err != nil {
			t.Fatal(err)
		}
		if pos := 8 + n + info.DataOffsets[0]; pos%uint64(info.DType.Size()) != 0 {
			t.Errorf("%q (%s) starts at file offset %d, not aligned", name, info.DType, pos)
		}
	}
	w, _ := f.Get("w")
	v, err := w.Float32s()
	if err != nil || v[2] != 3.5 || !math.IsInf(float64(v[4]), 1) {
		t.Fatalf("w = %v, %v", v, err)
	}
	s, _ := f.Get("step")
	if i, err := s.Int64s(); err != nil || i[0] != 1<<40 {
		t.Fatalf("step = %v, %v", i, err)
	}
	ids, _ := f.Get("ids")
	if i, err := ids.Int64s(); err != nil || !slices.Equal(i, []int64{-1, 0, 7}) {
		t.Fatalf("ids = %v, %v", i, err)
	}
	if _, err := ids.Float32s(); err == nil {
		t.Fatal("I32 converted to float32 without complaint")
	}
	if _, ok := f.Get("nope"); ok {
		t.Fatal("Get found a missing tensor")
	}
}

// The exact bytes of a small file: layout order (8-byte dtypes first, then by name),
// metadata first, contiguous offsets, space padding to 8 bytes.
func TestGoldenLayout(t *testing.T) {
	b, err := Marshal([]Tensor{
		FromFloat32("b", []int{1}, []float32{1}),
		FromFloat64("z", []int{1}, []float64{2}),
		FromFloat32("a", []int{2}, []float32{3, 4}),
	}, map[string]string{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b)
	want := `{"__metadata__":{"k":"v"},"z":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},` +
		`"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},"b":{"dtype":"F32","shape":[1],"data_offsets":[16,20]}}`
	for len(want)%8 != 0 {
		want += " "
	}
	if got := string(b[8 : 8+n]); got != want {
		t.Fatalf("header\n got %q\nwant %q", got, want)
	}
	if len(b) != 8+int(n)+20 {
		t.Fatalf("file is %d bytes, want %d", len(b), 8+int(n)+20)
	}
	if got := math.Float64frombits(binary.LittleEndian.Uint64(b[8+n:])); got != 2 {
		t.Fatalf("first data element %v, want z's 2", got)
	}
}

func TestHalfAndBFloat(t *testing.T) {
	cases := []struct {
		bits uint16
		want float32
	}{
		{0x3c00, 1}, {0xc000, -2}, {0x7bff, 65504}, {0x0001, 1.0 / (1 << 24)},
		{0x0400, 1.0 / (1 << 14)}, {0x8000, float32(math.Copysign(0, -1))},
		{0x7c00, float32(math.Inf(1))}, {0xfc00, float32(math.Inf(-1))}, {0x3555, 0.33325195},
	}
	for _, c := range cases {
		got := HalfToFloat32(c.bits)
		if math.Float32bits(got) != math.Float32bits(c.want) {
			t.Errorf("HalfToFloat32(%#04x) = %v, want %v", c.bits, got, c.want)
		}
	}
	if v := HalfToFloat32(0x7e00); !math.IsNaN(float64(v)) {
		t.Errorf("HalfToFloat32(NaN) = %v", v)
	}
	bf := Tensor{Name: "bf", DType: BF16, Shape: []int{3}, Data: []byte{0x80, 0x3f, 0x00, 0xc0, 0x49, 0x40}}
	v, err := bf.Float32s()
	if err != nil || v[0] != 1 || v[1] != -2 || v[2] != 3.140625 {
		t.Fatalf("BF16 = %v, %v", v, err)
	}
	d, err := bf.Float64s()
	if err != nil || d[2] != 3.140625 {
		t.Fatalf("BF16 as float64 = %v, %v", d, err)
	}
	// A conversion error says what is wrong: the dtype, or the size.
	if _, err := (Tensor{Name: "i", DType: I32, Shape: []int{1}, Data: make([]byte, 4)}).Float64s(); err == nil ||
		!strings.Contains(err.Error(), "cannot convert I32 to float64") {
		t.Errorf("I32 as float64: %v", err)
	}
	if _, err := (Tensor{Name: "s", DType: F32, Shape: []int{2}, Data: make([]byte, 4)}).Float64s(); err == nil ||
		!strings.Contains(err.Error(), "needs 8 bytes, has 4") {
		t.Errorf("short F32 as float64: %v", err)
	}
}

func TestEncodeRejects(t *testing.T) {
	cases := map[string][]Tensor{
		"duplicate":     {FromFloat32("a", []int{1}, []float32{1}), FromFloat32("a", []int{1}, []float32{2})},
		"empty name":    {FromFloat32("", []int{1}, []float32{1})},
		"metadata name": {FromFloat32("__metadata__", []int{1}, []float32{1})},
		"short data":    {FromFloat32("a", []int{2, 2}, []float32{1, 2, 3})},
		"unknown dtype": {{Name: "a", DType: "F128", Shape: []int{1}, Data: make([]byte, 16)}},
		"negative dim":  {{Name: "a", DType: F32, Shape: []int{-1}, Data: nil}},
	}
	for name, ts := range cases {
		if _, err := Marshal(ts, nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// file builds a buffer with the given header text and data size.
func file(header string, data int) []byte {
	b := make([]byte, 8+len(header)+data)
	binary.LittleEndian.PutUint64(b, uint64(len(header)))
	copy(b[8:], header)
	return b
}

func TestDecodeRejects(t *testing.T) {
	good := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	if _, err := Decode(file(good, 8)); err != nil {
		t.Fatalf("good file refused: %v", err)
	}
	huge := make([]byte, 16)
	binary.LittleEndian.PutUint64(huge, 1<<62)
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"too short", []byte{1, 2, 3}, "too short"},
		{"header past end", file(good, 8)[:30], "runs past the end"},
		{"huge header", huge, "exceeds the limit"},
		{"truncated data", file(good, 4), "outside the 4-byte data section"},
		{"trailing data", file(good, 12), "cover 8 of the 12"},
		{"not an object", file(`[1,2]`, 0), "does not start with '{'"},
		{"bad json", file(`{"a":`, 0), "header"},
		{"garbage after", file(`{} x`, 0), "unexpected bytes"},
		{"unknown dtype", file(`{"a":{"dtype":"Q7","shape":[1],"data_offsets":[0,1]}}`, 1), "unknown dtype"},
		{"shape mismatch", file(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, 8), "needs 12 bytes"},
		{"negative dim", file(`{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, 8), "negative dimension"},
		{"overflowing shape", file(`{"a":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,8]}}`, 8), "more elements"},
		{"reversed offsets", file(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}}`, 8), "outside"},
		{"three offsets", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,8]}}`, 8), "want 2"},
		{"no shape", file(`{"a":{"dtype":"F32","data_offsets":[0,8]}}`, 8), "missing shape"},
		{"gap", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), "contiguous"},
		{"overlap", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), "contiguous"},
		{"duplicate", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), "duplicate"},
		{"bad metadata", file(`{"__metadata__":{"k":1}}`, 0), "__metadata__"},
		{"empty name", file(`{"":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}`, 0), "empty tensor name"},
		{"bad utf8", file("{\"\xff\":1}", 0), "UTF-8"},
	}
	for _, c := range cases {
		_, err := Decode(c.b)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

func TestReadFileNamesPath(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.safetensors")
	if err := WriteFile(p, sample(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(p); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, b[:len(b)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("truncated file: %v", err)
	}
}

// Another tool reads what we write: a minimal reader in Python (header JSON plus
// numpy.frombuffer), independent of this package.
func TestNumpyReadsOurFile(t *testing.T) {
	py := ""
	for _, cand := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(cand, "-c", "import numpy").Run() == nil {
			py = cand
			break
		}
	}
	if py == "" {
		t.Skip("no python3 with numpy (Debian: apt-get install python3-numpy)")
	}
	p := filepath.Join(t.TempDir(), "x.safetensors")
	if err := WriteFile(p, sample(), map[string]string{"who": "pplaunch"}); err != nil {
		t.Fatal(err)
	}
	const reader = `
import json, struct, sys, numpy as np
b = open(sys.argv[1], 'rb').read()
n, = struct.unpack('<Q', b[:8])
h = json.loads(b[8:8+n])
meta = h.pop('__metadata__', {})
types = {'F32': '<f4', 'F64': '<f8', 'F16': '<f2', 'I32': '<i4', 'I64': '<i8'}
out = {'meta': meta}
for name, info in h.items():
    s, e = info['data_offsets']
    a = np.frombuffer(b[8+n+s:8+n+e], dtype=types[info['dtype']]).reshape(info['shape'])
    out[name] = {'shape': list(a.shape), 'values': [float(x) if np.isfinite(x) else str(x) for x in a.ravel()]}
print(json.dumps(out))
`
	outb, err := exec.Command(py, "-c", reader, p).CombinedOutput()
	if err != nil {
		t.Fatalf("python reader: %v\n%s", err, outb)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(outb, &got); err != nil {
		t.Fatalf("python output %q: %v", outb, err)
	}
	want := map[string]string{
		"meta":  `{"who": "pplaunch"}`,
		"w":     `{"shape": [2, 3], "values": [1.0, -2.0, 3.5, 0.0, "inf", -0.25]}`,
		"ids":   `{"shape": [3], "values": [-1.0, 0.0, 7.0]}`,
		"scale": `{"shape": [], "values": [3.141592653589793]}`,
		"step":  `{"shape": [1], "values": [1099511627776.0]}`,
		"empty": `{"shape": [0, 4], "values": []}`,
		"half":  `{"shape": [2], "values": [1.0, -2.0]}`,
	}
	for k, w := range want {
		if string(got[k]) != w {
			t.Errorf("numpy read %s = %s, want %s", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("numpy saw %d entries, want %d: %s", len(got), len(want), outb)
	}
}

// Decode must never panic, whatever the bytes; what it accepts must re-encode to a
// file that decodes to the same tensors.
func FuzzDecode(f *testing.F) {
	good, _ := Marshal(sample(), map[string]string{"a": "b"})
	f.Add(good)
	f.Add(file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 8))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Decode(b)
		if err != nil {
			return
		}
		again, err := Marshal(file.Tensors, file.Metadata)
		if err != nil {
			t.Fatalf("decoded file does not re-encode: %v", err)
		}
		file2, err := Decode(again)
		if err != nil {
			t.Fatalf("re-encoded file does not decode: %v", err)
		}
		if len(file2.Tensors) != len(file.Tensors) {
			t.Fatalf("%d tensors, then %d", len(file.Tensors), len(file2.Tensors))
		}
		for i, x := range file.Tensors {
			y := file2.Tensors[i]
			if x.Name != y.Name || x.DType != y.DType || !slices.Equal(x.Shape, y.Shape) || string(x.Data) != string(y.Data) {
				t.Fatalf("tensor %q changed in the round trip", x.Name)
			}
		}
	})
}
