package gateway_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/pplaunch/pplaunch/store/etcdstore/etcdtest"
	"github.com/pplaunch/pplaunch/store/etcdstore/gateway"
)

func ctx(t *testing.T) context.Context { return etcdtest.Context(t) }

// TestWatchCompacted: a watch from a revision etcd compacted away ends with
// an error that says so, and what to do.
func TestWatchCompacted(t *testing.T) {
	srv := etcdtest.Start(t, etcdtest.Options{})
	cli, c := srv.Client(t), ctx(t)
	var rev int64
	for _, v := range []string{"1", "2", "3"} {
		h, err := cli.Put(c, "k", v, 0)
		if err != nil {
			t.Fatal(err)
		}
		rev = h.Revision
	}
	if err := cli.Call(c, "kv/compaction", map[string]string{"revision": "3"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Range(c, gateway.RangeRequest{Key: []byte("k"), Revision: 2}); !errors.Is(err, gateway.ErrCompacted) {
		t.Errorf("read at a compacted revision: %v; want %v", err, gateway.ErrCompacted)
	}
	var last gateway.WatchResponse
	for wr := range cli.Watch(c, gateway.WatchRequest{Key: []byte("k"), StartRevision: 2}) {
		last = wr
	}
	if !errors.Is(last.Err, gateway.ErrCompacted) || !strings.Contains(last.Err.Error(), "compacted its history up to revision 3") ||
		!strings.Contains(last.Err.Error(), "--auto-compaction-retention") {
		t.Errorf("watch from revision 2 of %d, compacted at 3: %v", rev, last.Err)
	}
}

// TestLeaseGone: a revoked lease is ErrLeaseNotFound to a keep-alive and
// ends KeepAlive; a key bound to it went with it.
func TestLeaseGone(t *testing.T) {
	srv := etcdtest.Start(t, etcdtest.Options{})
	cli, c := srv.Client(t), ctx(t)
	id, err := cli.Grant(c, 5)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(c, "leased", "v", id); err != nil {
		t.Fatal(err)
	}
	if ttl, err := cli.KeepAliveOnce(c, id); err != nil || ttl != 5 {
		t.Fatalf("keep-alive of a live lease: %d, %v; want 5", ttl, err)
	}
	kept := make(chan error, 1)
	go func() { kept <- cli.KeepAlive(c, id, 5) }()
	if err := cli.Revoke(c, id); err != nil {
		t.Fatal(err)
	}
	if err := <-kept; !errors.Is(err, gateway.ErrLeaseNotFound) {
		t.Errorf("KeepAlive of a lease revoked: %v; want %v", err, gateway.ErrLeaseNotFound)
	}
	if _, err := cli.KeepAliveOnce(c, id); !errors.Is(err, gateway.ErrLeaseNotFound) {
		t.Errorf("keep-alive of a revoked lease: %v; want %v", err, gateway.ErrLeaseNotFound)
	}
	if r, err := cli.Get(c, "leased"); err != nil || len(r.Kvs) != 0 {
		t.Errorf("the key bound to the revoked lease: %v, %v; want gone", r.Kvs, err)
	}
	if _, err := cli.Put(c, "k", "v", id); !errors.Is(err, gateway.ErrLeaseNotFound) {
		t.Errorf("put bound to a revoked lease: %v; want %v", err, gateway.ErrLeaseNotFound)
	}
}

// TestNextEndpoint: an endpoint that refuses connections is passed over
// for the next one.
func TestNextEndpoint(t *testing.T) {
	srv := etcdtest.Start(t, etcdtest.Options{})
	cli := gateway.New(gateway.Config{Endpoints: []string{"127.0.0.1:1", srv.Endpoint}})
	defer cli.Close()
	if _, err := cli.Put(ctx(t), "k", "v", 0); err != nil {
		t.Fatalf("put with the first endpoint down: %v", err)
	}
}

// TestWatchReopens: a watch whose connection breaks is reopened where it
// left off: no change is lost or repeated.
func TestWatchReopens(t *testing.T) {
	srv := etcdtest.Start(t, etcdtest.Options{})
	p := newProxy(t, srv.Endpoint)
	cli, direct, c := gateway.New(gateway.Config{Endpoints: []string{p.addr}}), srv.Client(t), ctx(t)
	defer cli.Close()
	h, err := direct.Put(c, "k/0", "0", 0)
	if err != nil {
		t.Fatal(err)
	}
	w := cli.Watch(c, gateway.WatchRequest{Key: []byte("k/"), RangeEnd: gateway.PrefixEnd("k/"), StartRevision: h.Revision})
	var got []string
	next := func() {
		wr, ok := <-w
		if !ok || wr.Err != nil {
			t.Fatalf("watch ended: %v", wr.Err)
		}
		for _, ev := range wr.Events {
			got = append(got, string(ev.Kv.Value))
		}
	}
	next() // k/0: the watch's connection is open
	p.cut()
	for _, v := range []string{"1", "2"} {
		if _, err := direct.Put(c, "k/"+v, v, 0); err != nil {
			t.Fatal(err)
		}
	}
	for len(got) < 3 {
		next()
	}
	if strings.Join(got, " ") != "0 1 2" {
		t.Errorf("changes seen through a watch broken once: %q; want 0 1 2", got)
	}
}

// TestConnectionReused: requests one after another share one connection
// (each answer is read to its end).
func TestConnectionReused(t *testing.T) {
	srv := etcdtest.Start(t, etcdtest.Options{})
	p := newProxy(t, srv.Endpoint)
	cli, c := gateway.New(gateway.Config{Endpoints: []string{p.addr}}), ctx(t)
	defer cli.Close()
	for i := range 20 {
		if _, err := cli.Put(c, "k", "v", 0); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Get(c, "k"); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Delete(c, "absent"); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := cli.Revoke(c, 12345); !errors.Is(err, gateway.ErrLeaseNotFound) {
				t.Fatalf("revoke of no lease: %v; want %v", err, gateway.ErrLeaseNotFound)
			}
		}
	}
	if n := p.accepted(); n != 1 {
		t.Errorf("61 requests one after another took %d connections; want 1", n)
	}
}

// proxy forwards TCP connections to an address; cut breaks those open.
type proxy struct {
	addr  string
	mu    sync.Mutex
	conns []net.Conn
	n     int // connections accepted
}

func (p *proxy) accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

func newProxy(t *testing.T, to string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := &proxy{addr: ln.Addr().String()}
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", to)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.n++
			p.mu.Unlock()
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
	return p
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
