package bench

import (
	"slices"
	"strings"
	"testing"
)

func envOf(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func TestChooseTarget(t *testing.T) {
	cases := []struct {
		name   string
		netns  int
		shaped bool
		env    map[string]string
		want   ScalingTarget
		err    string
	}{
		{"this machine", 0, false, nil, ScalingTarget{TargetLocal, 1}, ""},
		{"simulated hosts win over Slurm", 4, true, map[string]string{"SLURM_JOB_ID": "7", "SLURM_JOB_NUM_NODES": "8"}, ScalingTarget{TargetNetns, 4}, ""},
		{"an allocation", 0, false, map[string]string{"SLURM_JOB_ID": "7", "SLURM_JOB_NUM_NODES": "8"}, ScalingTarget{TargetSlurm, 8}, ""},
		{"the batch script", 0, false, map[string]string{"SLURM_JOB_ID": "7", "SLURM_STEP_ID": "batch", "SLURM_NNODES": "2"}, ScalingTarget{TargetSlurm, 2}, ""},
		{"inside a step", 0, false, map[string]string{"SLURM_JOB_ID": "7", "SLURM_STEP_ID": "0", "SLURM_NNODES": "2"}, ScalingTarget{}, "not under srun"},
		{"shaping real links", 0, true, nil, ScalingTarget{}, "give --netns N too"},
		{"bad node count", 0, false, map[string]string{"SLURM_JOB_ID": "7", "SLURM_JOB_NUM_NODES": "x"}, ScalingTarget{}, `SLURM_JOB_NUM_NODES="x"`},
		{"too many hosts", 65, false, nil, ScalingTarget{}, "--netns 65"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ChooseTarget(c.netns, c.shaped, envOf(c.env))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("%+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

func TestDefaultSizes(t *testing.T) {
	cases := []struct {
		name              string
		t                 ScalingTarget
		nodes, nproc      []int
		wantNodes, wantNP []int
		err               string
	}{
		{"one machine", ScalingTarget{TargetLocal, 1}, nil, nil, []int{1}, []int{1, 2, 4}, ""},
		{"six hosts", ScalingTarget{TargetNetns, 6}, nil, nil, []int{1, 2, 4, 6}, []int{1}, ""},
		{"four nodes", ScalingTarget{TargetSlurm, 4}, nil, []int{2}, []int{1, 2, 4}, []int{2}, ""},
		{"given", ScalingTarget{TargetNetns, 4}, []int{2, 4}, []int{1, 2}, []int{2, 4}, []int{1, 2}, ""},
		{"nodes on one machine", ScalingTarget{TargetLocal, 1}, []int{1, 2}, nil, nil, nil, "give --netns N to simulate"},
		{"more nodes than hosts", ScalingTarget{TargetNetns, 2}, []int{4}, nil, nil, nil, "--nodes 4: more than 2 simulated hosts"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, p, err := DefaultSizes(c.t, c.nodes, c.nproc)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || !slices.Equal(n, c.wantNodes) || !slices.Equal(p, c.wantNP) {
				t.Fatalf("nodes %v nproc %v (%v); want %v and %v", n, p, err, c.wantNodes, c.wantNP)
			}
		})
	}
}
