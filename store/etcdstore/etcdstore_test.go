package etcdstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/store/etcdstore/etcdtest"
	"github.com/pplaunch/pplaunch/store/etcdstore/gateway"
)

func open(t *testing.T, srv *etcdtest.Server, run string, node int, edit ...func(*Options)) *Store {
	t.Helper()
	o := Options{Endpoints: []string{srv.Endpoint}, Prefix: "/pplaunch/" + run + "/", Node: node,
		Info: fmt.Sprintf("test node %d", node), ReachWithin: 5 * time.Second, MemberTTL: 2 * time.Second}
	for _, e := range edit {
		e(&o)
	}
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func ctx(t *testing.T) context.Context { return etcdtest.Context(t) }

// TestStoreSemantics: the store.Store contract the agents rely on, on a real
// etcd: blocking reads woken by a write, an atomic Add under contention,
// compare-and-set, Wait for many keys, Delete and Count.
func TestStoreSemantics(t *testing.T) {
	srv := etcdtest.Start(t, etcdtest.Options{})
	a, b := open(t, srv, "sem", 0), open(t, srv, "sem", 1)
	c := ctx(t)
	got := make(chan string, 1)
	go func() {
		v, err := b.Get(c, "k")
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(v)
	}()
	if err := a.Set(c, "k", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	if v := <-got; v != "v1" {
		t.Fatalf("blocked Get returned %q, want v1", v)
	}
	var wg sync.WaitGroup
	for _, s := range []*Store{a, b} {
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.Add(c, "n", 3); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	if n, err := a.Add(c, "n", 0); err != nil || n != 60 {
		t.Fatalf("20 concurrent adds of 3: %d, %v; want 60", n, err)
	}
	if cur, ok, err := a.CompareAndSet(c, "cas", nil, []byte("x")); err != nil || !ok || string(cur) != "x" {
		t.Fatalf("CAS on an absent key: %q %v %v", cur, ok, err)
	}
	if cur, ok, err := b.CompareAndSet(c, "cas", nil, []byte("y")); err != nil || ok || string(cur) != "x" {
		t.Fatalf("CAS expecting absent on a present key: %q %v %v; want x, false", cur, ok, err)
	}
	if cur, ok, err := b.CompareAndSet(c, "cas", []byte("x"), []byte("z")); err != nil || !ok || string(cur) != "z" {
		t.Fatalf("CAS x→z: %q %v %v", cur, ok, err)
	}
	if cur, ok, err := b.CompareAndSet(c, "absent", []byte("x"), []byte("z")); err != nil || ok || cur != nil {
		t.Fatalf("CAS expecting x on an absent key: %q %v %v; want nil, false", cur, ok, err)
	}
	keys := make([]string, 40)
	for i := range keys {
		keys[i] = fmt.Sprintf("w/node/%d", i)
	}
	waited := make(chan error, 1)
	go func() { waited <- a.Wait(c, keys...) }()
	for i, k := range keys {
		if err := []*Store{a, b}[i%2].Set(c, k, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-waited; err != nil {
		t.Fatalf("Wait for 40 keys: %v", err)
	}
	if v, err := a.Get(c, keys[0]); err != nil || v == nil || len(v) != 0 {
		t.Fatalf("an empty value reads back as %v, %v; want empty and non-nil", v, err)
	}
	short, cancel := context.WithTimeout(c, 200*time.Millisecond)
	err := a.Wait(short, "w/node/0", "w/never")
	cancel()
	if err == nil || !strings.Contains(err.Error(), "1 of 2 keys") {
		t.Fatalf("Wait with a key never set: %v; want a timeout naming 1 of 2 keys", err)
	}
	if n, err := a.Count(c); err != nil || n != 43 {
		t.Fatalf("Count %d, %v; want 43 (k, n, cas and 40 w/node keys)", n, err)
	}
	if m, err := b.Missing(c, "w/node/3", "w/node/never", "k"); err != nil || fmt.Sprint(m) != "[w/node/never]" {
		t.Fatalf("Missing: %v, %v; want [w/node/never]", m, err)
	}
	if ok, err := a.Delete(c, "k"); err != nil || !ok {
		t.Fatalf("Delete k: %v %v", ok, err)
	}
	if ok, err := a.Delete(c, "k"); err != nil || ok {
		t.Fatalf("Delete k again: %v %v; want false", ok, err)
	}
}

// TestLastToLeaveClearsTheRun: once every agent closed, etcd holds nothing
// of the run, and a run of the same id starts clean.
func TestLastToLeaveClearsTheRun(t *testing.T) {
	srv := etcdtest.Start(t, etcdtest.Options{})
	cli := srv.Client(t)
	c := ctx(t)
	for round := range 2 {
		a, b := open(t, srv, "again", 0), open(t, srv, "again", 1)
		if _, ok, err := a.CompareAndSet(c, "rdzv/0/node/0", nil, []byte("1")); err != nil || !ok {
			t.Fatalf("round %d: node key taken: %v %v (a stale key of the run before?)", round, ok, err)
		}
		b.Set(c, "x", []byte("y"))
		a.Close()
		b.Close()
		r, err := cli.Range(c, gateway.Prefix("/pplaunch/again/"))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Kvs) != 0 {
			t.Fatalf("round %d: %d keys of the run left after every agent closed, first %q", round, len(r.Kvs), r.Kvs[0].Key)
		}
	}
}

// TestDeadMemberLapses: an agent that stops without closing (killed) is
// reported Lapsed once its lease runs out; one that closes is Left; a new one
// is Joined.
func TestDeadMemberLapses(t *testing.T) {
	srv := etcdtest.Start(t, etcdtest.Options{})
	a := open(t, srv, "lapse", 0)
	c := ctx(t)
	events := make(chan MemberEvent, 8)
	go a.Members(c, func(e MemberEvent) { events <- e })
	// Members has read the membership once it sees this join.
	b := open(t, srv, "lapse", 1)
	if e := <-events; e.Node != 1 || e.Kind != Joined {
		t.Fatalf("first event %+v, want node 1 joined", e)
	}
	d := open(t, srv, "lapse", 2)
	if e := <-events; e.Node != 2 || e.Kind != Joined || e.Holder != "test node 2" {
		t.Fatalf("event %+v, want node 2 joined", e)
	}
	b.Close()
	if e := <-events; e.Node != 1 || e.Kind != Left {
		t.Fatalf("event %+v, want node 1 left", e)
	}
	d.abandon() // as if killed: no more keep-alives, nothing revoked
	if e := <-events; e.Node != 2 || e.Kind != Lapsed {
		t.Fatalf("event %+v, want node 2's lease lapsed", e)
	}
}

// abandon stops the keep-alives and drops the connection without leaving:
// what a killed agent does.
func (s *Store) abandon() {
	s.mu.Lock()
	s.done = true
	s.mu.Unlock()
	s.stop()
	s.wg.Wait()
	s.cli.Close()
}

func TestDuplicateNodeRank(t *testing.T) {
	srv := etcdtest.Start(t, etcdtest.Options{})
	open(t, srv, "dup", 1)
	_, err := Open(context.Background(), Options{Endpoints: []string{srv.Endpoint}, Prefix: "/pplaunch/dup/", Node: 1,
		Info: "second", ReachWithin: 5 * time.Second, MemberTTL: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "node rank 1 of run dup is already held by another agent (test node 1)") ||
		!strings.Contains(err.Error(), "--node-rank") {
		t.Fatalf("second agent for node 1: %v", err)
	}
}

func TestBadEndpoint(t *testing.T) {
	if _, err := etcdtest.Binary(); err != nil {
		t.Skip(err)
	}
	_, err := Open(context.Background(), Options{Endpoints: []string{"127.0.0.1:1"}, Prefix: "/pplaunch/x/", ReachWithin: time.Second})
	if err == nil || !strings.Contains(err.Error(), "etcd at 127.0.0.1:1: not reachable within 1s") || !strings.Contains(err.Error(), "check --rdzv-endpoint") {
		t.Fatalf("unreachable endpoint: %v", err)
	}
}

// TestTLS: with the right CA and client certificate the store works; every
// wrong or missing piece is an error naming the option to fix.
func TestTLS(t *testing.T) {
	srv := etcdtest.Start(t, etcdtest.Options{TLS: true})
	good := func(o *Options) { o.CACert, o.Cert, o.Key = srv.CACert, srv.Cert, srv.Key }
	s := open(t, srv, "tls", 0, good)
	if err := s.Set(ctx(t), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "no-such.pem")
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	os.WriteFile(garbage, []byte("not a certificate"), 0o600)
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want []string
	}{
		{"missing CA file", func(o *Options) { good(o); o.CACert = missing }, []string{"--rdzv-conf cacert=" + missing, "no such file"}},
		{"CA file not PEM", func(o *Options) { good(o); o.CACert = garbage }, []string{"etcd TLS", "want PEM files"}},
		{"cert without key", func(o *Options) { good(o); o.Key = "" }, []string{"cert= and key= go together"}},
		{"another CA", func(o *Options) { good(o); o.CACert = srv.OtherCA }, []string{"TLS failed", "check --rdzv-conf cacert="}},
		{"no client certificate", func(o *Options) { good(o); o.Cert, o.Key = "", "" }, []string{"etcd at " + srv.Endpoint, "cert= and key="}},
		{"plain TCP to a TLS server", func(o *Options) {}, []string{"etcd at " + srv.Endpoint, "cacert="}},
	} {
		o := Options{Endpoints: []string{srv.Endpoint}, Prefix: "/pplaunch/tls/", Node: 1, ReachWithin: 2 * time.Second}
		tc.edit(&o)
		_, err := Open(context.Background(), o)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v; want it to say %q", tc.name, err, w)
			}
		}
	}
}

// TestAuth: a user with the right password works; a wrong password or no
// user is an error saying which option to give.
func TestAuth(t *testing.T) {
	srv := etcdtest.Start(t, etcdtest.Options{})
	srv.EnableAuth(t, "rootpw", "trainer", "s3cret")
	s := open(t, srv, "auth", 0, func(o *Options) { o.User, o.Password = "trainer", "s3cret" })
	if err := s.Set(ctx(t), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, user, password string
		want                 []string
	}{
		{"wrong password", "trainer", "wrong", []string{`refused user "trainer"`, "authentication failed", "password="}},
		{"no user", "", "", []string{"authentication enabled", "user=NAME"}},
	} {
		_, err := Open(context.Background(), Options{Endpoints: []string{srv.Endpoint}, Prefix: "/pplaunch/auth/", Node: 1,
			User: tc.user, Password: tc.password, ReachWithin: 2 * time.Second})
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v; want it to say %q", tc.name, err, w)
			}
		}
	}
}

// TestTLSAndAuth: over TLS with authentication on, a client certificate
// without a Common Name and a user's password work; one with a Common Name,
// which etcd's JSON gateway refuses then, is an error naming the fix.
func TestTLSAndAuth(t *testing.T) {
	srv := etcdtest.Start(t, etcdtest.Options{TLS: true})
	srv.EnableAuth(t, "rootpw", "trainer", "s3cret")
	s := open(t, srv, "tlsauth", 0, func(o *Options) {
		o.CACert, o.Cert, o.Key, o.User, o.Password = srv.CACert, srv.Cert, srv.Key, "trainer", "s3cret"
	})
	if err := s.Set(ctx(t), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), Options{Endpoints: []string{srv.Endpoint}, Prefix: "/pplaunch/tlsauth/", Node: 1,
		CACert: srv.CACert, Cert: srv.NamedCert, Key: srv.NamedKey, User: "trainer", Password: "s3cret", ReachWithin: 2 * time.Second})
	for _, w := range []string{"etcd at " + srv.Endpoint, "refused the client certificate " + srv.NamedCert, "Common Name", "cert= and key="} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("a client certificate with a Common Name: %v; want it to say %q", err, w)
		}
	}
}
