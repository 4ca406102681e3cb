package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"unicode/utf8"
)

// ReadFile reads and decodes a safetensors file; errors name the file.
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

type tensorInfo struct {
	DType       DType    `json:"dtype"`
	Shape       []int    `json:"shape"`
	DataOffsets []uint64 `json:"data_offsets"`
}

// Decode parses a safetensors buffer. The returned tensors share b.
func Decode(b []byte) (*File, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("safetensors: %d bytes, too short for the 8-byte header length", len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	if n > MaxHeaderLen {
		return nil, fmt.Errorf("safetensors: header length %d exceeds the limit %d", n, MaxHeaderLen)
	}
	if n > uint64(len(b)-8) {
		return nil, fmt.Errorf("safetensors: header length %d runs past the end of the %d-byte file (truncated?)", n, len(b))
	}
	h, data := b[8:8+n], b[8+n:]
	if len(h) == 0 || h[0] != '{' {
		return nil, errors.New("safetensors: header does not start with '{'")
	}
	if !utf8.Valid(h) {
		return nil, errors.New("safetensors: header is not valid UTF-8")
	}
	f := &File{}
	var spans []span
	dec := json.NewDecoder(bytes.NewReader(h))
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("safetensors: header: %w", err)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("safetensors: header: %w", err)
		}
		name := tok.(string) // object keys are always strings
		if seen[name] {
			return nil, fmt.Errorf("safetensors: header: duplicate key %q", name)
		}
		seen[name] = true
		if name == "" {
			return nil, errors.New("safetensors: header: empty tensor name")
		}
		if name == metaKey {
			if err := dec.Decode(&f.Metadata); err != nil {
				return nil, fmt.Errorf("safetensors: header: %s must map strings to strings: %w", metaKey, err)
			}
			continue
		}
		var info tensorInfo
		if err := dec.Decode(&info); err != nil {
			return nil, fmt.Errorf("safetensors: header: tensor %q: %w", name, err)
		}
		t, begin, err := info.tensor(name, data)
		if err != nil {
			return nil, fmt.Errorf("safetensors: tensor %q: %w", name, err)
		}
		f.Tensors = append(f.Tensors, t)
		spans = append(spans, span{begin, begin + len(t.Data), name})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("safetensors: header: %w", err)
	}
	if rest := h[dec.InputOffset():]; len(bytes.TrimLeft(rest, " \t\r\n")) != 0 {
		return nil, fmt.Errorf("safetensors: header: %d unexpected bytes after the JSON object", len(rest))
	}
	if err := checkOffsets(spans, len(data)); err != nil {
		return nil, err
	}
	sort.Slice(f.Tensors, func(i, j int) bool { return f.Tensors[i].Name < f.Tensors[j].Name })
	return f, nil
}

// tensor validates one header entry against the data section and returns the tensor
// and its data offset.
func (info tensorInfo) tensor(name string, data []byte) (Tensor, int, error) {
	size := info.DType.Size()
	if size == 0 {
		return Tensor{}, 0, fmt.Errorf("unknown dtype %q", info.DType)
	}
	if info.Shape == nil {
		return Tensor{}, 0, errors.New("missing shape")
	}
	if len(info.DataOffsets) != 2 {
		return Tensor{}, 0, fmt.Errorf("data_offsets has %d numbers, want 2", len(info.DataOffsets))
	}
	begin, end := info.DataOffsets[0], info.DataOffsets[1]
	if begin > end || end > uint64(len(data)) {
		return Tensor{}, 0, fmt.Errorf("data_offsets [%d, %d] outside the %d-byte data section (truncated?)", begin, end, len(data))
	}
	elems, err := elements(info.Shape, uint64(len(data)))
	if err != nil {
		return Tensor{}, 0, err
	}
	if elems*uint64(size) != end-begin {
		return Tensor{}, 0, fmt.Errorf("shape %v of %s needs %d bytes, data_offsets [%d, %d] give %d",
			info.Shape, info.DType, elems*uint64(size), begin, end, end-begin)
	}
	return Tensor{Name: name, DType: info.DType, Shape: info.Shape, Data: data[begin:end:end]}, int(begin), nil
}

// span is where one tensor's bytes lie in the data section.
type span struct {
	begin, end int
	name       string
}

// checkOffsets requires the tensors to tile the data section exactly: no gaps, no
// overlaps, nothing after the last tensor.
func checkOffsets(spans []span, dataLen int) error {
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].begin != spans[j].begin {
			return spans[i].begin < spans[j].begin
		}
		return spans[i].end < spans[j].end
	})
	pos := 0
	for _, s := range spans {
		if s.begin != pos {
			return fmt.Errorf("safetensors: tensor %q starts at data offset %d, want %d (offsets must be contiguous)", s.name, s.begin, pos)
		}
		pos = s.end
	}
	if pos != dataLen {
		return fmt.Errorf("safetensors: tensors cover %d of the %d data bytes", pos, dataLen)
	}
	return nil
}
