package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestBenchJSONParsesAsPrinted: with the launcher's default [rank N] tags,
// the stdout of `pplaunch --nproc 2 bench p2p --json` (and allreduce) is a
// stream of JSON objects and nothing else, while the ranks' stderr keeps
// its tags.
func TestBenchJSONParsesAsPrinted(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		sizes int
	}{
		{[]string{"--nproc", "2", "bench", "p2p", "--min", "8", "--max", "1K", "--iters", "4", "--reps", "1", "--json"}, 8},
		{[]string{"--nproc", "2", "bench", "allreduce", "--min", "8", "--max", "1K", "--iters", "2", "--reps", "1", "--json"}, 8},
	} {
		var out, errb bytes.Buffer
		cmd := pplaunch(t, nil, tc.args...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		if code := exitCode(t, cmd.Run()); code != 0 {
			t.Fatalf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", tc.args, code, out.String(), errb.String())
		}
		dec := json.NewDecoder(bytes.NewReader(out.Bytes()))
		n := 0
		for {
			var row map[string]any
			err := dec.Decode(&row)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%v: stdout is not JSON as printed after %d objects: %v\n%s", tc.args, n, err, out.String())
			}
			if _, ok := row["bytes"]; !ok {
				t.Errorf("%v: object without bytes: %v", tc.args, row)
			}
			n++
		}
		if n != tc.sizes {
			t.Errorf("%v: %d objects, want %d", tc.args, n, tc.sizes)
		}
		if strings.Contains(out.String(), "[rank") {
			t.Errorf("%v: a tag on stdout:\n%s", tc.args, out.String())
		}
	}
}
