package launch

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/pplaunch/pplaunch/store/etcdstore"
)

// The rendezvous backends (--rdzv-backend), with torchrun's names. "static"
// (torchrun's default) and "c10d" are the built-in TCP store hosted by node
// 0's agent; "etcd" and "etcd-v2" are an etcd cluster, spoken to with etcd's
// v3 API (torchrun's etcd-v2 handler also speaks v3: the name is its
// rendezvous protocol's version).
var (
	builtinBackends = []string{"static", "c10d"}
	etcdBackends    = []string{"etcd", "etcd-v2"}
)

// EtcdDefaultPort is etcd's client port, for an --rdzv-endpoint without one.
const EtcdDefaultPort = 2379

// EtcdRendezvous is how the agents reach etcd (--rdzv-backend etcd). The
// ranks still meet at the built-in TCP store, hosted by node 0's agent, which
// publishes its address in etcd.
type EtcdRendezvous struct {
	Endpoints         []string // HOST:PORT, from --rdzv-endpoint
	CACert, Cert, Key string   // --rdzv-conf cacert=, cert=, key=
	User, Password    string   // --rdzv-conf user=, password= (or PPLAUNCH_RDZV_PASSWORD)
}

// placeRendezvous sets where the agents meet: the built-in store (see
// placeStore), or etcd.
func (c *Config) placeRendezvous(f Flags, slurm *slurmInfo, getenv func(string) string) error {
	backend := f.RdzvBackend
	switch {
	case backend == "" || slices.Contains(builtinBackends, backend):
		if f.RdzvConf != "" {
			return fmt.Errorf("--rdzv-conf %q: the built-in store takes no options; they are for --rdzv-backend etcd", f.RdzvConf)
		}
		return c.placeStore(f, slurm)
	case slices.Contains(etcdBackends, backend):
	default:
		return fmt.Errorf("--rdzv-backend %q: want static (or c10d: the built-in store on node 0, the default) or etcd (or etcd-v2)", backend)
	}
	if f.Standalone {
		return fmt.Errorf("--standalone hosts its own store on this machine: drop --rdzv-backend %s", backend)
	}
	if f.RdzvID == "" && slurm == nil {
		return fmt.Errorf("--rdzv-backend %s needs --rdzv-id ID, the same on every node: it names the run's keys in etcd (/pplaunch/ID/)", backend)
	}
	e, err := parseEtcd(f.RdzvEndpoint, f.RdzvConf, getenv)
	if err != nil {
		return err
	}
	c.Etcd = e
	// Node 0 hosts the ranks' store: at --master-addr, else its host name,
	// on --master-port, else a free port; the other nodes read where from etcd.
	// One node needs no rendezvous: its ranks meet on loopback, as without etcd.
	c.StoreHost = f.MasterAddr
	if c.StoreHost == "" && c.NNodes == 1 {
		c.StoreHost = "127.0.0.1"
	}
	if c.StoreHost == "" {
		if c.StoreHost, err = os.Hostname(); err != nil {
			return fmt.Errorf("--rdzv-backend %s: node 0 publishes its host name for the ranks' store, and it has none (%v): give --master-addr", backend, err)
		}
	}
	if f.MasterPort != nil {
		if *f.MasterPort < 1 || *f.MasterPort > 65535 {
			return fmt.Errorf("--master-port %d: must be in 1..65535", *f.MasterPort)
		}
		c.StorePort = *f.MasterPort
	}
	return nil
}

// parseEtcd reads --rdzv-endpoint (HOST[:PORT][,HOST[:PORT]...], etcd's
// client URLs, "http://" or "https://" allowed) and --rdzv-conf
// (KEY=VALUE,..., as torchrun's).
func parseEtcd(endpoints, conf string, getenv func(string) string) (*EtcdRendezvous, error) {
	if endpoints == "" {
		return nil, fmt.Errorf("--rdzv-backend etcd needs --rdzv-endpoint HOST:%d, an etcd server's client address (several: comma-separated)", EtcdDefaultPort)
	}
	e := &EtcdRendezvous{}
	for _, ep := range strings.Split(endpoints, ",") {
		ep = strings.TrimSpace(ep)
		bare := strings.TrimPrefix(strings.TrimPrefix(ep, "https://"), "http://")
		host, port, err := net.SplitHostPort(bare)
		if err != nil {
			host, port = strings.Trim(bare, "[]"), strconv.Itoa(EtcdDefaultPort)
		}
		if p, perr := strconv.Atoi(port); host == "" || strings.ContainsAny(host, "/ ") || perr != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("--rdzv-endpoint %q: %q is not HOST[:PORT] (an etcd client address, port %d by default)", endpoints, ep, EtcdDefaultPort)
		}
		e.Endpoints = append(e.Endpoints, ep[:len(ep)-len(bare)]+net.JoinHostPort(host, port))
	}
	if err := e.parseConf(conf); err != nil {
		return nil, err
	}
	if e.Password == "" {
		e.Password = getenv(etcdstore.EnvPassword)
	}
	if e.Password != "" && e.User == "" {
		return nil, fmt.Errorf("--rdzv-conf: a password without user=NAME")
	}
	if e.User != "" && e.Password == "" {
		return nil, fmt.Errorf("--rdzv-conf user=%s: no password: give password= or export %s", e.User, etcdstore.EnvPassword)
	}
	return e, nil
}

// parseConf reads --rdzv-conf's KEY=VALUE pairs.
func (e *EtcdRendezvous) parseConf(conf string) error {
	if conf == "" {
		return nil
	}
	fields := map[string]*string{"cacert": &e.CACert, "cert": &e.Cert, "key": &e.Key, "user": &e.User, "password": &e.Password}
	for _, kv := range strings.Split(conf, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		p := fields[k]
		switch {
		case !ok || v == "":
			return fmt.Errorf("--rdzv-conf %q: %q is not KEY=VALUE", conf, kv)
		case p == nil:
			return fmt.Errorf("--rdzv-conf %q: unknown key %q; the etcd backend takes cacert, cert, key (TLS files, PEM), user and password", conf, k)
		}
		*p = v
	}
	if (e.Cert == "") != (e.Key == "") {
		return fmt.Errorf("--rdzv-conf %q: cert= and key= go together (the client certificate and its private key)", conf)
	}
	return nil
}
