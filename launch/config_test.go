package launch

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/contract"
)

func envFunc(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func intp(n int) *int { return &n }

// srunEnv is what a task of `srun -N2 --ntasks-per-node=T` sees on node nodeID.
func srunEnv(nodeID, local, tasksPerNode int) map[string]string {
	return map[string]string{
		"SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0",
		"SLURM_STEP_NUM_NODES": "2", "SLURM_NNODES": "2", "SLURM_NODEID": itoa(nodeID),
		"SLURM_STEP_NUM_TASKS": itoa(2 * tasksPerNode), "SLURM_PROCID": itoa(nodeID*tasksPerNode + local),
		"SLURM_LOCALID": itoa(local), "SLURM_STEP_NODELIST": "gpu-a[07-08]", "SLURM_JOB_NODELIST": "gpu-a[07-08]",
		"SLURM_STEP_TASKS_PER_NODE": itoa(tasksPerNode) + "(x2)",
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

const testSecret = "s3cret-for-tests"

// withToken is env with PPLAUNCH_TOKEN set, as every node of a multi-node job has it.
func withToken(env map[string]string) map[string]string {
	e := map[string]string{contract.EnvToken: testSecret}
	for k, v := range env {
		e[k] = v
	}
	return e
}

func baseFlags() Flags {
	return Flags{NProc: "1", RdzvTimeout: Duration(time.Minute), GracePeriod: Duration(time.Second)}
}

func TestResolve(t *testing.T) {
	cases := []struct {
		name       string
		flags      func(*Flags)
		env        map[string]string
		nnodes     int
		nodeRank   int
		host       string
		port       int
		runID      string
		tokenExact string
	}{
		{name: "single node", flags: func(f *Flags) {}, nnodes: 1, host: "127.0.0.1", port: 0},
		{name: "single node with a port", flags: func(f *Flags) { f.MasterPort = intp(7000) }, nnodes: 1, host: "127.0.0.1", port: 7000},
		{name: "standalone", flags: func(f *Flags) { f.Standalone = true }, nnodes: 1, host: "127.0.0.1", port: 0},
		{name: "torchrun flags", flags: func(f *Flags) {
			f.NNodes, f.NodeRank, f.RdzvEndpoint, f.RdzvID = Nodes(2), intp(1), "head:1234", "job7"
		}, env: withToken(nil), nnodes: 2, nodeRank: 1, host: "head", port: 1234, runID: "job7", tokenExact: testSecret},
		{name: "master addr and port", flags: func(f *Flags) {
			f.NNodes, f.MasterAddr, f.MasterPort = Nodes(3), "10.0.0.1", intp(3000)
		}, env: withToken(nil), nnodes: 3, host: "10.0.0.1", port: 3000, runID: "rdzv-10.0.0.1:3000", tokenExact: testSecret},
		{name: "endpoint without port", flags: func(f *Flags) { f.RdzvEndpoint = "head" }, nnodes: 1, host: "head", port: DefaultPort},
		{name: "slurm", flags: func(f *Flags) {}, env: withToken(srunEnv(1, 0, 1)),
			nnodes: 2, nodeRank: 1, host: "gpu-a07", port: 24242, runID: "slurm-4242.0", tokenExact: testSecret},
		{name: "flags win over slurm", flags: func(f *Flags) { f.NodeRank, f.RdzvEndpoint = intp(0), "other:99" }, env: withToken(srunEnv(1, 0, 1)),
			nnodes: 2, nodeRank: 0, host: "other", port: 99, runID: "slurm-4242.0"},
		{name: "one node of a one-node slurm step", flags: func(f *Flags) {}, env: func() map[string]string {
			e := srunEnv(0, 0, 1)
			e["SLURM_STEP_NUM_NODES"], e["SLURM_STEP_NUM_TASKS"], e["SLURM_STEP_NODELIST"], e["SLURM_STEP_TASKS_PER_NODE"] = "1", "1", "gpu-a07", "1"
			return e
		}(), nnodes: 1, host: "gpu-a07", port: 24242, runID: "slurm-4242.0"},
		{name: "token from the environment", flags: func(f *Flags) { f.RdzvID = "x" },
			env: map[string]string{contract.EnvToken: "secret"}, nnodes: 1, host: "127.0.0.1", port: 0, runID: "x", tokenExact: "secret"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := baseFlags()
			c.flags(&f)
			got, err := Resolve(f, envFunc(c.env))
			if err != nil {
				t.Fatal(err)
			}
			if got.NNodes != c.nnodes || got.NodeRank != c.nodeRank || got.StoreHost != c.host || got.StorePort != c.port {
				t.Errorf("got nnodes %d node %d store %s:%d; want %d %d %s:%d", got.NNodes, got.NodeRank, got.StoreHost, got.StorePort, c.nnodes, c.nodeRank, c.host, c.port)
			}
			if c.runID != "" && got.RunID != c.runID {
				t.Errorf("run id %q, want %q", got.RunID, c.runID)
			}
			if c.tokenExact != "" && got.Token != c.tokenExact {
				t.Errorf("token %q, want %q", got.Token, c.tokenExact)
			}
			if c.tokenExact == "" && len(got.Token) < 16 {
				t.Errorf("token %q is too short", got.Token)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	cases := []struct {
		name    string
		flags   func(*Flags)
		env     map[string]string
		wantErr string
	}{
		{"bad nproc", func(f *Flags) { f.NProc = "four" }, nil, `--nproc "four"`},
		{"zero nproc", func(f *Flags) { f.NProc = "0" }, nil, `--nproc "0"`},
		{"node rank out of range", func(f *Flags) { f.NNodes, f.NodeRank = Nodes(2), intp(2) }, nil, "--node-rank 2"},
		{"multi-node without endpoint", func(f *Flags) { f.NNodes = Nodes(2) }, nil, "needs --rdzv-endpoint"},
		{"standalone multi-node", func(f *Flags) { f.NNodes, f.Standalone = Nodes(2), true }, nil, "--standalone"},
		{"bad port", func(f *Flags) { f.RdzvEndpoint = "h:x" }, nil, `port "x"`},
		{"empty port", func(f *Flags) { f.RdzvEndpoint = "h:" }, nil, `--rdzv-endpoint "h:": empty port`},
		{"no host", func(f *Flags) { f.RdzvEndpoint = ":29500" }, nil, `--rdzv-endpoint ":29500": no host`},
		{"zero rdzv timeout", func(f *Flags) { f.RdzvTimeout = 0 }, nil, "--rdzv-timeout 0s: must be positive"},
		{"negative grace period", func(f *Flags) { f.GracePeriod = -Duration(time.Second) }, nil, "--grace-period -1s"},
		{"standalone with an endpoint", func(f *Flags) { f.Standalone, f.RdzvEndpoint = true, "h:1" }, nil, "--standalone picks"},
		{"tee without log dir", func(f *Flags) { f.Tee = true }, nil, "--tee needs --log-dir"},
		{"tag and no-tag", func(f *Flags) { f.Tag, f.NoTag = true, true }, nil, "--no-tag"},
		{"filter out of range", func(f *Flags) { f.NProc, f.LocalRanksFilter = "2", "0,2" }, nil, "--local-ranks-filter"},
		{"slash in run id", func(f *Flags) { f.RdzvID = "a/b" }, nil, "--rdzv-id"},
		{"several tasks per node in agent mode", func(f *Flags) {}, srunEnv(0, 0, 4), "srun --ntasks-per-node=1"},
		{"several nodes without a token", func(f *Flags) { f.NNodes, f.RdzvEndpoint = Nodes(2), "head:1" }, nil,
			"--nnodes 2: a job on several nodes needs a secret token shared by its nodes, and PPLAUNCH_TOKEN is not set; generate one and export the same value on every node before pplaunch starts: export PPLAUNCH_TOKEN=$(openssl rand -hex 16)"},
		{"a slurm step on two nodes without a token", func(f *Flags) {}, srunEnv(1, 0, 1), "--nnodes 2: a job on several nodes needs a secret token"},
		{"bad slurm node list", func(f *Flags) {}, func() map[string]string {
			e := srunEnv(0, 0, 1)
			e["SLURM_STEP_NODELIST"] = "gpu[1-"
			return e
		}(), "SLURM_STEP_NODELIST"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := baseFlags()
			c.flags(&f)
			_, err := Resolve(f, envFunc(c.env))
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, c.wantErr)
			}
		})
	}
}

func TestDirectEnv(t *testing.T) {
	cases := []struct {
		name  string
		flags func(*Flags)
		env   map[string]string
		want  map[string]string
	}{
		{"srun", func(f *Flags) {}, withToken(srunEnv(1, 2, 4)), map[string]string{
			"RANK": "6", "LOCAL_RANK": "2", "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4", "NODE_RANK": "1", "GROUP_RANK": "1",
			"MASTER_ADDR": "gpu-a07", "MASTER_PORT": "24242", "PPLAUNCH_STORE_ADDR": "gpu-a07:24242",
			"PPLAUNCH_RUN_ID": "slurm-4242.0", "PPLAUNCH_ROLE": "rank", "PPLAUNCH_HOST_STORE": ""}},
		{"srun rank 0 hosts the store", func(f *Flags) {}, withToken(srunEnv(0, 0, 4)), map[string]string{
			"RANK": "0", "PPLAUNCH_HOST_STORE": "1"}},
		{"flags win", func(f *Flags) { f.MasterAddr, f.MasterPort, f.RdzvID = "10.1.1.1", intp(5000), "mine" }, withToken(srunEnv(1, 0, 4)), map[string]string{
			"MASTER_ADDR": "10.1.1.1", "MASTER_PORT": "5000", "PPLAUNCH_RUN_ID": "mine", "PPLAUNCH_TOKEN": testSecret}},
		{"srun on one node: the store on loopback", func(f *Flags) {}, map[string]string{
			"SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0", "SLURM_STEP_NUM_NODES": "1", "SLURM_NNODES": "1", "SLURM_NODEID": "0",
			"SLURM_STEP_NUM_TASKS": "4", "SLURM_PROCID": "2", "SLURM_LOCALID": "2", "SLURM_STEP_NODELIST": "gpu-a07",
			"SLURM_JOB_NODELIST": "gpu-a07", "SLURM_STEP_TASKS_PER_NODE": "4",
		}, map[string]string{"RANK": "2", "WORLD_SIZE": "4", "MASTER_ADDR": "127.0.0.1", "PPLAUNCH_STORE_ADDR": "127.0.0.1:24242",
			"PPLAUNCH_TOKEN": DeriveToken("slurm-4242.0")}},
		{"mpirun on one node", func(f *Flags) {}, map[string]string{
			"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "3", "OMPI_COMM_WORLD_LOCAL_SIZE": "4", "OMPI_MCA_ess_base_jobid": "7",
		}, map[string]string{"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "3", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500", "NODE_RANK": "0",
			"PPLAUNCH_TOKEN": DeriveToken("mpi-7")}},
		{"mpirun on two nodes", func(f *Flags) { f.MasterAddr = "n1" }, withToken(map[string]string{
			"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
		}), map[string]string{"RANK": "3", "NODE_RANK": "1", "GROUP_WORLD_SIZE": "2", "MASTER_ADDR": "n1", "PPLAUNCH_TOKEN": testSecret}},
		{"hydra", func(f *Flags) {}, map[string]string{"PMI_RANK": "1", "PMI_SIZE": "2"},
			map[string]string{"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := baseFlags()
			c.flags(&f)
			got, err := DirectEnv(f, envFunc(c.env))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("%s=%q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestDirectEnvErrors(t *testing.T) {
	uneven := map[string]string{"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "5", "OMPI_COMM_WORLD_LOCAL_RANK": "0", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}
	cases := []struct {
		name    string
		flags   func(*Flags)
		env     map[string]string
		wantErr string
	}{
		{"no launcher", nil, nil, "no launcher found"},
		{"mpirun across nodes without master", nil, map[string]string{
			"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "0", "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
		}, "--master-addr"},
		{"rank beyond world", nil, map[string]string{"PMI_RANK": "5", "PMI_SIZE": "2"}, "inconsistent"},
		{"garbage rank", nil, map[string]string{"OMPI_COMM_WORLD_RANK": "x"}, "OMPI_COMM_WORLD_RANK"},
		// Flags given with --direct are checked as in agent mode.
		{"uneven nodes", func(f *Flags) { f.MasterAddr = "n1" }, uneven, "not spread evenly over nodes"},
		{"node rank out of range", func(f *Flags) { f.MasterAddr, f.NNodes, f.NodeRank = "n1", Nodes(3), intp(3) }, uneven, "node rank 3 is not in 0..2"},
		{"zero nodes", func(f *Flags) { f.NNodes = Nodes(0) }, srunEnv(1, 0, 4), "--nnodes 0: must be 1 or more"},
		{"zero rdzv timeout", func(f *Flags) { f.RdzvTimeout = 0 }, srunEnv(1, 0, 4), "--rdzv-timeout 0s"},
		{"agent-only flags", func(f *Flags) { f.NProc, f.MaxRestarts, f.Tee = "4", 2, true }, srunEnv(1, 0, 4),
			"so --nproc 4, --max-restarts 2, --tee would be ignored"},
		{"elastic node count", func(f *Flags) { f.NNodes = &NodeCount{Min: 1, Max: 2} }, srunEnv(1, 0, 4),
			"so --nnodes 1:2 (elastic: the agents re-form the world) would be ignored"},
		{"srun on two nodes without a token", nil, srunEnv(1, 0, 4),
			"--direct: rank 4 of 8 on 2 nodes: a job on several nodes needs a secret token shared by its nodes, and PPLAUNCH_TOKEN is not set"},
		{"mpirun on two nodes without a token", func(f *Flags) { f.MasterAddr = "n1" }, map[string]string{
			"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "2",
		}, "export PPLAUNCH_TOKEN=$(openssl rand -hex 16)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := baseFlags()
			if c.flags != nil {
				c.flags(&f)
			}
			_, err := DirectEnv(f, envFunc(c.env))
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, c.wantErr)
			}
		})
	}
	// Uneven nodes are fine when the flags say where this rank is.
	f := baseFlags()
	f.MasterAddr, f.NNodes, f.NodeRank = "n1", Nodes(3), intp(1)
	env, err := DirectEnv(f, envFunc(withToken(uneven)))
	if err != nil || env["NODE_RANK"] != "1" || env["GROUP_WORLD_SIZE"] != "3" {
		t.Fatalf("uneven nodes with flags: %v, %v", env, err)
	}
}

// The token of a job on one node is generated, never derived from what
// others can know (the run id, the endpoint): two resolutions with the same
// flags get different tokens, neither the run id's derivation.
func TestSingleNodeTokenIsRandom(t *testing.T) {
	f := baseFlags()
	f.RdzvID, f.RdzvEndpoint = "job7", "127.0.0.1:29500"
	a, err := Resolve(f, envFunc(nil))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Resolve(f, envFunc(nil))
	if err != nil {
		t.Fatal(err)
	}
	if a.Token == b.Token || a.Token == DeriveToken("job7") || len(a.Token) < 32 {
		t.Fatalf("tokens %q and %q of two single-node runs with run id job7: want random 128-bit ones", a.Token, b.Token)
	}
}

// jobToken decides the token: what PPLAUNCH_TOKEN gives, else generated on
// one node, else refused.
func TestJobToken(t *testing.T) {
	for _, c := range []struct {
		given   string
		nnodes  int
		want    string // "" with no error: a generated one
		wantErr bool
	}{
		{"given", 1, "given", false},
		{"given", 4, "given", false},
		{"", 1, "", false},
		{"", 2, "", true},
	} {
		got, err := jobToken(c.given, c.nnodes, "--nnodes")
		switch {
		case c.wantErr && (err == nil || got != ""):
			t.Errorf("jobToken(%q, %d) = %q, %v; want a refusal", c.given, c.nnodes, got, err)
		case !c.wantErr && err != nil:
			t.Errorf("jobToken(%q, %d): %v", c.given, c.nnodes, err)
		case c.want != "" && got != c.want, c.want == "" && !c.wantErr && len(got) != 32:
			t.Errorf("jobToken(%q, %d) = %q, want %q (or a generated one)", c.given, c.nnodes, got, c.want)
		}
	}
}

func TestRankEnvThreads(t *testing.T) {
	c := Config{NProc: 4, Cores: 8, NodeRank: 1, RunID: "r", Token: "t", MaxRestarts: 2}
	w := World{Size: 8, FirstRank: 4, NNodes: 2, MasterAddr: "h", MasterPort: 7, StoreAddr: "h:6"}
	get := func(env []string, k string) (string, bool) {
		for _, kv := range env {
			if key, v, _ := strings.Cut(kv, "="); key == k {
				return v, true
			}
		}
		return "", false
	}
	env := rankEnv([]string{"PATH=/bin", "RANK=99"}, c, w, 2, 1)
	for k, want := range map[string]string{"RANK": "6", "LOCAL_RANK": "2", "WORLD_SIZE": "8", "GOMAXPROCS": "2",
		"OMP_NUM_THREADS": "1", "PATH": "/bin", "PPLAUNCH_RESTART_COUNT": "1", "TORCHELASTIC_RESTART_COUNT": "1", "TORCHELASTIC_MAX_RESTARTS": "2"} {
		if v, _ := get(env, k); v != want {
			t.Errorf("%s=%q, want %q", k, v, want)
		}
	}
	n := 0
	for _, kv := range env {
		if strings.HasPrefix(kv, "RANK=") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("RANK appears %d times in %q", n, env)
	}
	env = rankEnv([]string{"GOMAXPROCS=3"}, c, w, 0, 0)
	if v, _ := get(env, "GOMAXPROCS"); v != "3" {
		t.Errorf("user's GOMAXPROCS=3 became %q", v)
	}
	c.NProc = 1
	env = rankEnv(nil, c, w, 0, 0)
	if v, ok := get(env, "OMP_NUM_THREADS"); ok {
		t.Errorf("one rank per node got OMP_NUM_THREADS=%q", v)
	}
}

func TestNProcAuto(t *testing.T) {
	f := baseFlags()
	f.NProc = "auto"
	c, err := Resolve(f, envFunc(map[string]string{"CUDA_VISIBLE_DEVICES": "0,1,2"}))
	if err != nil || c.NProc != 3 {
		t.Fatalf("auto with 3 visible GPUs: %d ranks, %v", c.NProc, err)
	}
	// CUDA ignores the devices from the first negative index on.
	for env, want := range map[string]int{"1,0,-1,2": 2, "-1": 0} {
		if got := countGPUs(envFunc(map[string]string{"CUDA_VISIBLE_DEVICES": env})); got != want {
			t.Errorf("CUDA_VISIBLE_DEVICES=%s: %d GPUs, want %d", env, got, want)
		}
	}
}

// FuzzLocalRanksFilter: the filter parser never panics, and what it accepts
// shows only local ranks it names, all in range.
func FuzzLocalRanksFilter(f *testing.F) {
	for _, s := range []string{"", "0", "0,2", " 1 , 3", "4", "-1", "a", "0,,1", "1,1"} {
		f.Add(s, 4)
	}
	f.Fuzz(func(t *testing.T, s string, nproc int) {
		if nproc < 1 || nproc > 64 {
			return
		}
		show, err := parseFilter(s, nproc)
		if err != nil {
			return
		}
		for i := range nproc {
			if show(i) && s != "" && !strings.Contains(s, strconv.Itoa(i)) {
				t.Fatalf("filter %q shows local rank %d, which it does not name", s, i)
			}
		}
	})
}

// FuzzEndpoint: the --rdzv-endpoint parser never panics and never returns a
// port outside 1..65535 or an empty host.
func FuzzEndpoint(f *testing.F) {
	for _, s := range []string{"head:1234", "head", "[::1]:80", "[::1]", "h:", ":1", "h:x", "h:99999", "a:b:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" {
			return
		}
		host, port, err := endpoint(Flags{RdzvEndpoint: s}, nil)
		if err == nil && (host == "" || port < 1 || port > 65535) {
			t.Fatalf("endpoint %q = %q, %d: accepted out of range", s, host, port)
		}
	})
}
