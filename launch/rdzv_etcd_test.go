package launch

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/store/etcdstore"
	"github.com/pplaunch/pplaunch/store/etcdstore/etcdtest"
	"github.com/pplaunch/pplaunch/store/etcdstore/gateway"
)

// runEtcdNodes runs nnodes agents of run on loopback, meeting in the etcd
// at endpoint, each with edit applied to its config, and waits for all.
func runEtcdNodes(t *testing.T, endpoint, run string, nnodes, nproc int, script string, edit func(*Config)) ([]int, []*watchBuf, []*watchBuf) {
	t.Helper()
	codes := make([]int, nnodes)
	outs, errs := make([]*watchBuf, nnodes), make([]*watchBuf, nnodes)
	var wg sync.WaitGroup
	for n := range outs {
		c := testConfig(nproc)
		c.NNodes, c.NodeRank, c.RunID = nnodes, n, run
		c.StorePort = 0 // node 0 hosts the ranks' store on a free port and publishes it
		c.Etcd = &EtcdRendezvous{Endpoints: []string{endpoint}}
		edit(&c)
		outs[n], errs[n] = newWatchBuf(), newWatchBuf()
		wg.Go(func() { codes[n] = Run(context.Background(), c, shell(script, outs[n], errs[n]), make(chan os.Signal)) })
	}
	wg.Wait()
	return codes, outs, errs
}

// TestEtcdTwoNodesFormOneWorld: two agents meet in a real etcd; their ranks
// get one world, node 0's host as MASTER_ADDR and the store node 0 hosts;
// a rank's failure restarts both groups (a second rendezvous round); and
// once the job is over etcd holds nothing of it.
func TestEtcdTwoNodesFormOneWorld(t *testing.T) {
	srv := etcdtest.Start(t, etcdtest.Options{})
	t.Setenv("UPDIR", t.TempDir())
	script := `echo "world $RANK $WORLD_SIZE $NODE_RANK $MASTER_ADDR $PPLAUNCH_STORE_ADDR $PPLAUNCH_RESTART_COUNT"; touch "$UPDIR/$RANK"; ` +
		`if [ "$PPLAUNCH_RESTART_COUNT" = 0 ] && [ "$RANK" = 3 ]; then while [ $(ls "$UPDIR" | wc -l) -lt 4 ]; do sleep 0.01; done; exit 7; fi`
	codes, outs, errs := runEtcdNodes(t, srv.Endpoint, "etcd-world", 2, 2, script, func(c *Config) { c.MaxRestarts = 1 })
	stores := map[string]bool{}
	for n := range 2 {
		if codes[n] != 0 {
			t.Fatalf("node %d exit %d; stderr:\n%s", n, codes[n], errs[n])
		}
		lines := regexp.MustCompile(`(?m)^\[rank \d\] world (.*)$`).FindAllStringSubmatch(outs[n].String(), -1)
		if len(lines) != 4 {
			t.Fatalf("node %d ran %d ranks over two attempts, want 4:\n%s", n, len(lines), outs[n])
		}
		for _, m := range lines {
			f := strings.Fields(m[1])
			if f[1] != "4" || f[2] != fmt.Sprint(n) || f[3] != "127.0.0.1" || !strings.HasPrefix(f[4], "127.0.0.1:") {
				t.Errorf("node %d: rank environment %q", n, m[1])
			}
			stores[f[4]] = true
		}
		if !strings.Contains(errs[n].String(), "rank 3 exited with code 7") {
			t.Errorf("node %d's summary does not name rank 3:\n%s", n, errs[n])
		}
	}
	if len(stores) != 1 {
		t.Errorf("the ranks were given %d store addresses, want node 0's one: %v", len(stores), stores)
	}
	r, err := srv.Client(t).Range(context.Background(), gateway.Prefix("/pplaunch/etcd-world/"))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Kvs) != 0 {
		t.Errorf("%d keys of the run left in etcd after it ended, first %q", len(r.Kvs), r.Kvs[0].Key)
	}
}

// TestEtcdFlagsDiffer: agents of one run with different --max-restarts are
// refused through etcd, as through the built-in store.
func TestEtcdFlagsDiffer(t *testing.T) {
	srv := etcdtest.Start(t, etcdtest.Options{})
	codes, _, errs := runEtcdNodes(t, srv.Endpoint, "etcd-flags", 2, 1, "true", func(c *Config) { c.MaxRestarts = c.NodeRank })
	for n := range 2 {
		if codes[n] != 1 || !strings.Contains(errs[n].String(), "--max-restarts differs between agents") {
			t.Errorf("node %d: exit %d, want 1 and the differing flag named; stderr:\n%s", n, codes[n], errs[n])
		}
	}
}

// TestEtcdNodeNeverJoins: with one node of three never started, the
// rendezvous times out naming it (and only it).
func TestEtcdNodeNeverJoins(t *testing.T) {
	srv := etcdtest.Start(t, etcdtest.Options{})
	// Two agents, of --nnodes 3: node 2 is never started.
	codes, _, errs := runEtcdNodes(t, srv.Endpoint, "etcd-never", 2, 1, "true", func(c *Config) { c.NNodes, c.RdzvTimeout = 3, 2*time.Second })
	if e := errs[0].String(); codes[0] != 1 || !strings.Contains(e, "node 2 never joined") || !strings.Contains(e, "at etcd "+srv.Endpoint+" under /pplaunch/etcd-never/") {
		t.Errorf("node 0: exit %d, want 1 and node 2 named as never joined; stderr:\n%s", codes[0], e)
	}
}

// TestEtcdTLSAndUser: agents that reach etcd over TLS with a client
// certificate, as a user with a password, form the world and finish.
func TestEtcdTLSAndUser(t *testing.T) {
	srv := etcdtest.Start(t, etcdtest.Options{TLS: true})
	srv.EnableAuth(t, "rootpw", "trainer", "s3cret")
	codes, outs, errs := runEtcdNodes(t, srv.Endpoint, "etcd-tls", 2, 1, `echo "world $RANK $WORLD_SIZE"`, func(c *Config) {
		c.Etcd.CACert, c.Etcd.Cert, c.Etcd.Key, c.Etcd.User, c.Etcd.Password = srv.CACert, srv.Cert, srv.Key, "trainer", "s3cret"
	})
	for n := range 2 {
		if codes[n] != 0 || !strings.Contains(outs[n].String(), fmt.Sprintf("world %d 2", n)) {
			t.Errorf("node %d: exit %d, output %q; stderr:\n%s", n, codes[n], outs[n], errs[n])
		}
	}
}

// TestEtcdOneNode: one node needs no rendezvous, so no etcd is contacted
// (none runs at the endpoint) and its ranks meet on loopback.
func TestEtcdOneNode(t *testing.T) {
	zero := 0
	c, err := Resolve(Flags{NProc: "1", NNodes: Nodes(1), NodeRank: &zero, RdzvBackend: "etcd", RdzvEndpoint: "127.0.0.1:1", RdzvID: "solo",
		RdzvTimeout: Duration(time.Second), GracePeriod: Duration(time.Second)}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if c.StoreHost != "127.0.0.1" {
		t.Errorf("one node's store on %q, want 127.0.0.1", c.StoreHost)
	}
	c.ShowLocal, c.Cores = func(int) bool { return true }, 1
	_, out, errb, done := runAgent(c, `echo "store $PPLAUNCH_STORE_ADDR"`)
	if code := wait(t, done, errb); code != 0 || !strings.Contains(out.String(), "store 127.0.0.1:") {
		t.Fatalf("exit %d, stdout %q; stderr:\n%s", code, out, errb)
	}
}

func TestEtcdNodesDecisions(t *testing.T) {
	n := newEtcdNodes(0)
	steps := []struct {
		what string
		do   func() string
		want string
	}{
		{"a node joins", func() string { return fmt.Sprint(n.lostNow(etcdstore.MemberEvent{Node: 1, Kind: etcdstore.Joined})) }, "false"},
		{"node 1 suspends", func() string { return fmt.Sprint(n.suspension("susp/1", []byte("1"))) }, "1 true 1 true"},
		{"its lease lapses while stopped", func() string { return fmt.Sprint(n.lostNow(etcdstore.MemberEvent{Node: 1, Kind: etcdstore.Lapsed})) }, "false"},
		{"it resumes", func() string { return fmt.Sprint(n.suspension("susp/1", []byte("2"))) }, "1 false 1 true"},
		{"a node that left", func() string { return fmt.Sprint(n.lostNow(etcdstore.MemberEvent{Node: 2, Kind: etcdstore.Left})) }, "false"},
		{"node 1's lease lapses", func() string { return fmt.Sprint(n.lostNow(etcdstore.MemberEvent{Node: 1, Kind: etcdstore.Lapsed})) }, "true"},
		{"reported once", func() string { return fmt.Sprint(n.lostNow(etcdstore.MemberEvent{Node: 1, Kind: etcdstore.Lapsed})) }, "false"},
		{"a lost node's counter", func() string { return fmt.Sprint(n.suspension("susp/1", []byte("3"))) }, "0 false 0 false"},
		{"this node's own lease", func() string { return fmt.Sprint(n.lostNow(etcdstore.MemberEvent{Node: 0, Kind: etcdstore.Lapsed})) }, "false"},
		{"this node's own counter", func() string { return fmt.Sprint(n.suspension("susp/0", []byte("1"))) }, "0 false 0 false"},
		{"a garbled counter", func() string { return fmt.Sprint(n.suspension("susp/3", []byte("x"))) }, "0 false 0 false"},
	}
	for _, s := range steps {
		if got := s.do(); got != s.want {
			t.Errorf("%s: %s, want %s", s.what, got, s.want)
		}
	}
}

func TestResolveEtcd(t *testing.T) {
	zero, port := 0, 29400
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	base := func() Flags {
		return Flags{NProc: "1", NNodes: Nodes(2), NodeRank: &zero, RdzvBackend: "etcd", RdzvEndpoint: "etcd1:2379,https://etcd2",
			RdzvID: "job", MasterAddr: "node0", RdzvTimeout: Duration(1e9), GracePeriod: Duration(1e9)}
	}
	f := base()
	f.MasterPort = &port
	f.RdzvConf = "cacert=/ca.pem,cert=/c.pem,key=/k.pem,user=u"
	c, err := Resolve(f, env(map[string]string{"PPLAUNCH_TOKEN": "t", etcdstore.EnvPassword: "pw"}))
	if err != nil {
		t.Fatal(err)
	}
	want := EtcdRendezvous{Endpoints: []string{"etcd1:2379", "https://etcd2:2379"}, CACert: "/ca.pem", Cert: "/c.pem", Key: "/k.pem", User: "u", Password: "pw"}
	if fmt.Sprint(*c.Etcd) != fmt.Sprint(want) || c.StoreHost != "node0" || c.StorePort != 29400 {
		t.Errorf("resolved %+v, store %s:%d; want %+v, node0:29400", *c.Etcd, c.StoreHost, c.StorePort, want)
	}
	if c, err := Resolve(Flags{NProc: "1", NNodes: Nodes(2), NodeRank: &zero, RdzvEndpoint: "n0:1234", RdzvTimeout: Duration(1e9)}, env(map[string]string{"PPLAUNCH_TOKEN": "t"})); err != nil || c.Etcd != nil {
		t.Errorf("no --rdzv-backend: etcd %+v, %v; want the built-in store", c.Etcd, err)
	}
	for _, tc := range []struct {
		edit func(*Flags)
		want string
	}{
		{func(f *Flags) { f.RdzvBackend = "zookeeper" }, `--rdzv-backend "zookeeper": want static (or c10d`},
		{func(f *Flags) { f.RdzvEndpoint = "" }, "needs --rdzv-endpoint HOST:2379"},
		{func(f *Flags) { f.RdzvEndpoint = "etcd1:notaport" }, `"etcd1:notaport" is not HOST[:PORT]`},
		{func(f *Flags) { f.RdzvID = "" }, "needs --rdzv-id ID"},
		{func(f *Flags) { f.RdzvConf = "cacert" }, `"cacert" is not KEY=VALUE`},
		{func(f *Flags) { f.RdzvConf = "protocol=https" }, `unknown key "protocol"`},
		{func(f *Flags) { f.RdzvConf = "cert=/c.pem" }, "cert= and key= go together"},
		{func(f *Flags) { f.RdzvConf = "user=u" }, "no password: give password= or export PPLAUNCH_RDZV_PASSWORD"},
		{func(f *Flags) { f.RdzvConf = "password=p" }, "a password without user=NAME"},
		{func(f *Flags) { f.RdzvBackend = "c10d"; f.RdzvConf = "user=u" }, "the built-in store takes no options"},
	} {
		f := base()
		tc.edit(&f)
		if _, err := Resolve(f, env(map[string]string{"PPLAUNCH_TOKEN": "t"})); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v; want %q", f, err, tc.want)
		}
	}
}
