package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchCommAsRanks runs `bench p2p` and `bench allreduce` as real ranks
// over TCP and checks that rank 0 prints one JSON object per size, each with a
// positive time and bandwidth, and that no all-reduce result was wrong.
func TestBenchCommAsRanks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		sizes int
	}{
		{"p2p", []string{"--nproc", "2", "bench", "p2p", "--min", "8", "--max", "64K", "--iters", "4", "--reps", "1", "--json"}, 14},
		{"p2p-untuned", []string{"--nproc", "2", "bench", "p2p", "--min", "8", "--max", "64K", "--iters", "4", "--reps", "1", "--json", "--autotune", "--no-poll"}, 14},
		{"allreduce", []string{"--nproc", "3", "bench", "allreduce", "--min", "8", "--max", "1M", "--iters", "2", "--reps", "1", "--json"}, 18},
		{"allreduce-tuned", []string{"--nproc", "3", "bench", "allreduce", "--min", "8", "--max", "1M", "--iters", "2", "--reps", "1", "--json", "--segment", "64K", "--socket-buffer", "512K"}, 18},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			cmd := pplaunch(t, nil, append([]string{"--no-tag"}, tc.args...)...)
			cmd.Stdout, cmd.Stderr = &out, &errb
			if code := exitCode(t, cmd.Run()); code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
			}
			var rows []map[string]any
			for _, line := range strings.Split(out.String(), "\n") {
				if !strings.HasPrefix(line, "{") {
					continue
				}
				var row map[string]any
				if err := json.Unmarshal([]byte(line), &row); err != nil {
					t.Fatalf("bad JSON line %q: %v", line, err)
				}
				rows = append(rows, row)
			}
			if len(rows) != tc.sizes {
				t.Fatalf("%d JSON rows, want %d:\n%s", len(rows), tc.sizes, out.String())
			}
			for _, row := range rows {
				secs, _ := row["seconds"].(float64)
				bw, _ := row["algbw_gbps"].(float64)
				if secs <= 0 || bw <= 0 {
					t.Errorf("row without a positive time and bandwidth: %v", row)
				}
				if wrong, ok := row["wrong"].(float64); ok && wrong != 0 {
					t.Errorf("all-reduce gave %v wrong elements: %v", wrong, row)
				}
			}
		})
	}
}

// Bad benchmark flags fail the ranks with the flag named, before any transfer.
func TestBenchCommBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "p2p", "--timeout", "0s"}, "--timeout 0s: must be positive"},
		{[]string{"bench", "allreduce", "--reps=-1"}, "bench allreduce: --reps -1: must be positive"},
	} {
		var out, errb bytes.Buffer
		cmd := pplaunch(t, nil, append([]string{"--nproc", "2", "--standalone"}, tc.args...)...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		if code := exitCode(t, cmd.Run()); code == 0 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, want non-zero and %q in stderr:\n%s", tc.args, code, tc.want, errb.String())
		}
	}
}
