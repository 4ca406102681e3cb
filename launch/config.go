package launch

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/pplaunch/pplaunch/contract"
)

// DefaultPort is the rendezvous port when none is given (torchrun's).
const DefaultPort = 29500

// Flags are the launcher's command-line flags, with torchrun's names. The struct
// tags are for github.com/alexflint/go-arg; each flag falls back to the
// environment variable named in its tag, and Slurm's variables fill what is still
// unset (flags win over the environment).
type Flags struct {
	NProc            string     `arg:"--nproc,env:PPLAUNCH_NPROC" default:"1" placeholder:"N|auto" help:"ranks on this node (alias --nproc-per-node); auto: one per GPU, else one per CPU"`
	NNodes           *NodeCount `arg:"--nnodes,env:PPLAUNCH_NNODES" placeholder:"N|MIN:MAX" help:"nodes in the job; MIN:MAX is elastic: the world re-forms, from the newest checkpoint, when a node is lost or a new one joins; more than 1 needs PPLAUNCH_TOKEN, a secret exported alike on every node [default: Slurm's SLURM_STEP_NUM_NODES, else 1]"`
	NodeRank         *int       `arg:"--node-rank,env:PPLAUNCH_NODE_RANK" placeholder:"R" help:"this node's rank, 0..nnodes-1 (elastic: any distinct number, the node's name in the job); node 0 hosts the store [default: SLURM_NODEID, else 0]"`
	RdzvEndpoint     string     `arg:"--rdzv-endpoint,env:PPLAUNCH_RDZV_ENDPOINT" placeholder:"HOST[:PORT]" help:"rendezvous store on node 0 [default: first host of SLURM_STEP_NODELIST]"`
	MasterAddr       string     `arg:"--master-addr,env:MASTER_ADDR" placeholder:"HOST" help:"node 0's host, when --rdzv-endpoint is not given"`
	MasterPort       *int       `arg:"--master-port,env:MASTER_PORT" placeholder:"PORT" help:"rendezvous port [default: a free port on one node, else 29500; under Slurm 20000 + job id mod 10000]"`
	RdzvBackend      string     `arg:"--rdzv-backend,env:PPLAUNCH_RDZV_BACKEND" default:"static" placeholder:"NAME" help:"where the agents meet: static (or c10d): the built-in store on node 0; etcd (or etcd-v2): an etcd cluster at --rdzv-endpoint HOST:2379 (the ranks' store stays on node 0, at --master-addr, else its host name)"`
	RdzvConf         string     `arg:"--rdzv-conf,env:PPLAUNCH_RDZV_CONF" placeholder:"K=V,..." help:"etcd options: cacert=FILE, cert=FILE, key=FILE (TLS, PEM), user=NAME, password=PW (or PPLAUNCH_RDZV_PASSWORD)"`
	RdzvID           string     `arg:"--rdzv-id,env:PPLAUNCH_RDZV_ID" placeholder:"ID" help:"run id, the same on every node (it names the log folder; it is not a secret) [default: slurm-JOB.STEP]"`
	Standalone       bool       `arg:"--standalone,env:PPLAUNCH_STANDALONE" help:"one node, store on a free loopback port"`
	MaxRestarts      int        `arg:"--max-restarts,env:PPLAUNCH_MAX_RESTARTS" placeholder:"N" help:"restart the whole group up to N times after a failure"`
	RdzvTimeout      Duration   `arg:"--rdzv-timeout,env:PPLAUNCH_RDZV_TIMEOUT" default:"15m" placeholder:"DUR" help:"how long agents wait for each other (at the rendezvous, and for the other nodes to finish) and ranks for the store; seconds, or 30s, 5m"`
	GracePeriod      Duration   `arg:"--grace-period,env:PPLAUNCH_GRACE_PERIOD" default:"10s" placeholder:"DUR" help:"SIGTERM to SIGKILL when the group stops; seconds, or 500ms, 1m"`
	LogDir           string     `arg:"--log-dir,env:PPLAUNCH_LOG_DIR" placeholder:"DIR" help:"write each rank's output to DIR/RUN-ID/rank.N/{stdout,stderr} instead of the console"`
	Tee              bool       `arg:"--tee,env:PPLAUNCH_TEE" help:"with --log-dir, also print to the console"`
	LocalRanksFilter string     `arg:"--local-ranks-filter,env:PPLAUNCH_LOCAL_RANKS_FILTER" placeholder:"0,1,..." help:"print only these local ranks' output on the console"`
	Tag              bool       `arg:"--tag,env:PPLAUNCH_TAG" help:"prefix each output line with [rank N] (the default)"`
	NoTag            bool       `arg:"--no-tag,env:PPLAUNCH_NO_TAG" help:"print ranks' output lines as they are"`
	Direct           bool       `arg:"--direct,env:PPLAUNCH_DIRECT" help:"no agent: this process is one rank of an srun or mpirun job (RANK from SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK)"`
	// Rank0Raw is set by a built-in job whose rank 0 prints machine-readable
	// lines (--json) on stdout: see outputPrefixes. Not a flag.
	Rank0Raw bool `arg:"-"`
}

// Config is the agent's resolved configuration.
type Config struct {
	NProc  int
	NNodes int // the most nodes (an elastic job's MAX)
	// MinNodes is an elastic job's MIN (--nnodes MIN:MAX with MIN < MAX),
	// else 0: the job then has exactly NNodes.
	MinNodes    int
	NodeRank    int    // elastic: the node's name in the job, not its place
	StoreHost   string // host of the rendezvous store (node 0)
	StorePort   int    // 0: any free port (single node)
	RunID       string
	Token       string
	MaxRestarts int
	RdzvTimeout time.Duration
	GracePeriod time.Duration
	LogDir      string
	Tee         bool
	Tag         bool
	Rank0Raw    bool // rank 0's stdout is relayed untagged (outputPrefixes)
	// ShowLocal reports whether local rank i's output goes to the console.
	ShowLocal func(i int) bool
	// Cores is how many CPUs the node's ranks share (for GOMAXPROCS).
	Cores int
	// From says where nnodes/node rank/endpoint came from, for the log.
	From string

	// Etcd is where the agents meet when it is an etcd cluster (nil: at the
	// store on node 0, StoreHost:StorePort).
	Etcd *EtcdRendezvous
}

// Elastic reports whether the job's world may change size (--nnodes MIN:MAX).
func (c Config) Elastic() bool { return c.MinNodes > 0 && c.MinNodes < c.NNodes }

// nodeCount is --nnodes as given.
func (c Config) nodeCount() NodeCount {
	if c.Elastic() {
		return NodeCount{Min: c.MinNodes, Max: c.NNodes}
	}
	return NodeCount{Min: c.NNodes, Max: c.NNodes}
}

// Resolve turns flags and the environment (getenv) into the agent's Config.
// On an error the Config returned holds what was resolved before it.
func Resolve(f Flags, getenv func(string) string) (Config, error) {
	c := Config{
		MaxRestarts: f.MaxRestarts,
		RdzvTimeout: f.RdzvTimeout.D(),
		GracePeriod: f.GracePeriod.D(),
		LogDir:      f.LogDir,
		Tee:         f.Tee,
		Tag:         !f.NoTag,
		Rank0Raw:    f.Rank0Raw,
		Cores:       runtime.NumCPU(),
		From:        "flags",
	}
	if err := checkAgentFlags(f); err != nil {
		return c, err
	}
	var err error
	if c.NProc, err = parseNProc(f.NProc, getenv); err != nil {
		return c, err
	}
	if c.ShowLocal, err = parseFilter(f.LocalRanksFilter, c.NProc); err != nil {
		return c, err
	}
	slurm, err := agentSlurmStep(getenv)
	if err != nil {
		return c, err
	}
	if slurm != nil {
		c.From = "slurm step " + slurm.id
	}
	if err := c.placeNode(f, slurm); err != nil {
		return c, err
	}
	if err := c.placeRendezvous(f, slurm, getenv); err != nil {
		return c, err
	}
	if err := c.nameRun(f, slurm, getenv); err != nil {
		return c, err
	}
	if c.LogDir != "" {
		c.LogDir = filepath.Clean(c.LogDir)
	}
	return c, nil
}

// checkAgentFlags rejects flag values that are wrong whatever the environment.
func checkAgentFlags(f Flags) error {
	if f.Tag && f.NoTag {
		return fmt.Errorf("--tag and --no-tag: give one")
	}
	if f.Tee && f.LogDir == "" {
		return fmt.Errorf("--tee needs --log-dir")
	}
	if f.MaxRestarts < 0 {
		return fmt.Errorf("--max-restarts %d: must be 0 or more", f.MaxRestarts)
	}
	if f.RdzvTimeout <= 0 {
		return fmt.Errorf("--rdzv-timeout %v: must be positive", f.RdzvTimeout)
	}
	if f.GracePeriod < 0 {
		return fmt.Errorf("--grace-period %v: must be 0 (SIGKILL at once) or more", f.GracePeriod)
	}
	return nil
}

// agentSlurmStep is the srun step the agent runs in (nil outside one). The
// agent is one per node, so a step with more tasks than nodes is refused.
func agentSlurmStep(getenv func(string) string) (*slurmInfo, error) {
	slurm, err := slurmStep(getenv)
	if err != nil || slurm == nil {
		return slurm, err
	}
	if slurm.ntasks != slurm.nnodes {
		return nil, fmt.Errorf("slurm step %s has %d tasks on %d nodes: the agent runs once per node (srun --ntasks-per-node=1 pplaunch ...), or give --direct to make each task one rank",
			slurm.id, slurm.ntasks, slurm.nnodes)
	}
	return slurm, nil
}

// placeNode sets the node count and this node's rank: flags first, then the
// srun step (unless --standalone), else one node.
func (c *Config) placeNode(f Flags, slurm *slurmInfo) error {
	c.NNodes = 1
	switch {
	case f.NNodes != nil:
		c.NNodes = f.NNodes.Max
		if f.NNodes.Min < f.NNodes.Max {
			c.MinNodes = f.NNodes.Min
		}
	case slurm != nil && !f.Standalone:
		c.NNodes = slurm.nnodes
	}
	if c.NNodes < 1 {
		return fmt.Errorf("--nnodes %d: must be 1 or more", c.NNodes)
	}
	switch {
	case f.NodeRank != nil:
		c.NodeRank = *f.NodeRank
	case slurm != nil && !f.Standalone:
		c.NodeRank = slurm.nodeID
	}
	if c.Elastic() {
		if c.NodeRank < 0 {
			return fmt.Errorf("--node-rank %d: an elastic job's nodes are named 0 (the store's host) and up", c.NodeRank)
		}
		return nil
	}
	if c.NodeRank < 0 || c.NodeRank >= c.NNodes {
		return fmt.Errorf("--node-rank %d: must be in 0..%d for --nnodes %d", c.NodeRank, c.NNodes-1, c.NNodes)
	}
	return nil
}

// placeStore sets where the rendezvous store listens.
func (c *Config) placeStore(f Flags, slurm *slurmInfo) error {
	if f.Standalone {
		if c.NNodes != 1 {
			return fmt.Errorf("--standalone is one node, but --nnodes is %d", c.NNodes)
		}
		if f.RdzvEndpoint != "" {
			return fmt.Errorf("--standalone picks its own endpoint: drop --rdzv-endpoint %s", f.RdzvEndpoint)
		}
		c.StoreHost, c.StorePort = "127.0.0.1", 0
		return nil
	}
	var err error
	c.StoreHost, c.StorePort, err = endpoint(f, slurm)
	if err != nil {
		return err
	}
	if c.StoreHost == "" {
		if c.NNodes > 1 {
			return fmt.Errorf("--nnodes %v needs --rdzv-endpoint HOST:PORT or --master-addr (or run inside srun)", c.nodeCount())
		}
		// One node and no endpoint: as --standalone, unless a port was asked for.
		c.StoreHost = "127.0.0.1"
		if f.MasterPort == nil {
			c.StorePort = 0
		}
	}
	return nil
}

// nameRun sets the run id (it names the log folder) and the store's token.
func (c *Config) nameRun(f Flags, slurm *slurmInfo, getenv func(string) string) error {
	c.RunID = f.RdzvID
	if c.RunID == "" && slurm != nil {
		c.RunID = "slurm-" + slurm.id
	}
	var err error
	if c.Token, err = jobToken(getenv(contract.EnvToken), c.NNodes, fmt.Sprintf("--nnodes %d", c.NNodes)); err != nil {
		return err
	}
	if c.RunID == "" && c.NNodes == 1 {
		c.RunID = "local-" + randomHex(6)
	}
	if c.RunID == "" {
		c.RunID = "rdzv-" + net.JoinHostPort(c.StoreHost, strconv.Itoa(c.StorePort))
	}
	if strings.ContainsAny(c.RunID, "/\\ \t\n") || c.RunID == "." || c.RunID == ".." {
		return fmt.Errorf("--rdzv-id %q: must not contain '/', '\\' or white space (it names the log folder)", c.RunID)
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// endpoint picks the store's host and port: --rdzv-endpoint, else --master-addr
// and --master-port, else the first host of the Slurm step.
func endpoint(f Flags, slurm *slurmInfo) (string, int, error) {
	port := DefaultPort
	if slurm != nil {
		port = slurm.port
	}
	if f.MasterPort != nil {
		port = *f.MasterPort
	}
	host := f.MasterAddr
	if f.RdzvEndpoint != "" {
		h, p, err := net.SplitHostPort(f.RdzvEndpoint)
		if err != nil {
			// No port: the whole thing is the host.
			h, p = strings.Trim(f.RdzvEndpoint, "[]"), ""
		}
		host = h
		switch {
		case host == "":
			return "", 0, fmt.Errorf("--rdzv-endpoint %q: no host (want HOST or HOST:PORT)", f.RdzvEndpoint)
		case err == nil && p == "":
			return "", 0, fmt.Errorf("--rdzv-endpoint %q: empty port (want HOST or HOST:PORT)", f.RdzvEndpoint)
		case p != "":
			if port, err = strconv.Atoi(p); err != nil {
				return "", 0, fmt.Errorf("--rdzv-endpoint %q: port %q is not a number", f.RdzvEndpoint, p)
			}
		}
	}
	if host == "" && slurm != nil {
		host = slurm.firstHost
	}
	if port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("rendezvous port %d: must be in 1..65535", port)
	}
	return host, port, nil
}

// parseNProc reads --nproc: a positive number, or auto (GPUs, else CPUs).
func parseNProc(s string, getenv func(string) string) (int, error) {
	if s == "auto" {
		if n := countGPUs(getenv); n > 0 {
			return n, nil
		}
		return runtime.NumCPU(), nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("--nproc %q: want a positive number or auto", s)
	}
	return n, nil
}

// countGPUs counts CUDA_VISIBLE_DEVICES entries, else /dev/nvidiaN devices.
// As CUDA does, it stops at the first negative index ("-1" hides every GPU).
func countGPUs(getenv func(string) string) int {
	if v := strings.TrimSpace(getenv("CUDA_VISIBLE_DEVICES")); v != "" {
		n := 0
		for _, d := range strings.Split(v, ",") {
			if strings.HasPrefix(strings.TrimSpace(d), "-") {
				break
			}
			n++
		}
		return n
	}
	devs, _ := filepath.Glob("/dev/nvidia[0-9]*")
	return len(devs)
}

// parseFilter reads --local-ranks-filter ("0,2"); empty shows every rank.
func parseFilter(s string, nproc int) (func(int) bool, error) {
	if s == "" {
		return func(int) bool { return true }, nil
	}
	show := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 0 || n >= nproc {
			return nil, fmt.Errorf("--local-ranks-filter %q: %q is not a local rank in 0..%d", s, part, nproc-1)
		}
		show[n] = true
	}
	return func(i int) bool { return show[i] }, nil
}
