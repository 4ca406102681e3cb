// Package etcdtest starts a real etcd server for tests: Debian's etcd-server
// (or any etcd on the PATH) on free loopback ports, its data in the test's
// temporary directory, optionally with TLS (certificates made here) or with
// authentication enabled. A test without the etcd binary skips, saying why.
package etcdtest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/store/etcdstore/gateway"
)

// Options says how to start the server.
type Options struct {
	TLS bool // serve TLS only, and ask for client certificates
	// Host is the address etcd serves clients on: 127.0.0.1 by default; a
	// test network's gateway (launch/netns) for agents in its namespaces,
	// which do not share the machine's loopback.
	Host string
}

// Server is a running etcd.
type Server struct {
	Endpoint string // HOST:PORT of its client URL
	// TLS files (Options.TLS): the CA that signed the server's and the
	// client's certificates, the client's certificate and key, and a second
	// CA that signed neither (for tests of a wrong CA). The client
	// certificate has no Common Name: with authentication on, etcd's JSON
	// gateway refuses one that has, such as NamedCert's ("trainer").
	CACert, Cert, Key, OtherCA string
	NamedCert, NamedKey        string
	log                        *lockedBuffer
}

// Binary finds etcd, or says why there is none.
func Binary() (string, error) {
	path, err := exec.LookPath("etcd")
	if err != nil {
		return "", fmt.Errorf("no etcd binary on the PATH (.ci/run installs Debian's etcd-server): %v", err)
	}
	return path, nil
}

// Start starts etcd and waits until a client reads from it; the test's
// cleanup kills it.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	s := &Server{log: &lockedBuffer{}}
	scheme := "http"
	var tlsArgs []string
	if o.TLS {
		scheme = "https"
		s.makeCerts(t, dir)
		tlsArgs = []string{"--cert-file", filepath.Join(dir, "server.pem"), "--key-file", filepath.Join(dir, "server-key.pem"),
			"--trusted-ca-file", s.CACert, "--client-cert-auth"}
	}
	host := o.Host
	if host == "" {
		host = "127.0.0.1"
	}
	client, peer := freePort(t, host), freePort(t, "127.0.0.1")
	s.Endpoint = net.JoinHostPort(host, strconv.Itoa(client))
	curl := scheme + "://" + s.Endpoint
	purl := "http://127.0.0.1:" + strconv.Itoa(peer)
	args := append([]string{"--name", "test", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", curl, "--advertise-client-urls", curl,
		"--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl,
		"--initial-cluster", "test=" + purl, "--log-level", "warn"}, tlsArgs...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	s.waitHealthy(t, exited)
	return s
}

// waitHealthy polls the server with a client until it answers.
func (s *Server) waitHealthy(t testing.TB, exited <-chan struct{}) {
	t.Helper()
	cli := s.Client(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		_, err := cli.Get(ctx, "health")
		cancel()
		if err == nil {
			return
		}
		select {
		case <-exited:
			t.Fatalf("etcd exited before it served:\n%s", s.log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd at %s not healthy within 30s: %v\n%s", s.Endpoint, err, s.log.String())
		}
	}
}

// Client is a client of the server (as root, or as the user and password
// given), closed at the test's end.
func (s *Server) Client(t testing.TB, userPassword ...string) *gateway.Client {
	t.Helper()
	cfg := gateway.Config{Endpoints: []string{s.Endpoint}, DialTimeout: 5 * time.Second}
	if s.CACert != "" {
		cfg.TLS = s.clientTLS(t)
	}
	if len(userPassword) == 2 {
		cfg.Username, cfg.Password = userPassword[0], userPassword[1]
	}
	cli := gateway.New(cfg)
	t.Cleanup(func() { cli.Close() })
	return cli
}

// clientTLS trusts the server's CA and presents the client certificate.
func (s *Server) clientTLS(t testing.TB) *tls.Config {
	t.Helper()
	ca, err := os.ReadFile(s.CACert)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	cert, err := tls.LoadX509KeyPair(s.Cert, s.Key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}
}

// EnableAuth turns authentication on with the root user's password, and adds
// user with password and the right to read and write everything.
func (s *Server) EnableAuth(t testing.TB, rootPassword, user, password string) {
	t.Helper()
	cli := s.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	every := []byte{0} // from the first key to the end
	steps := []struct {
		path string
		req  any
	}{
		{"auth/role/add", map[string]string{"name": "root"}},
		{"auth/user/add", map[string]string{"name": "root", "password": rootPassword}},
		{"auth/user/grant", map[string]string{"user": "root", "role": "root"}},
		{"auth/role/add", map[string]string{"name": "rdzv"}},
		{"auth/role/grant", map[string]any{"name": "rdzv", "perm": map[string]any{"permType": "READWRITE", "key": every, "range_end": every}}},
		{"auth/user/add", map[string]string{"name": user, "password": password}},
		{"auth/user/grant", map[string]string{"user": user, "role": "rdzv"}},
		{"auth/enable", struct{}{}},
	}
	for i, step := range steps {
		if err := cli.Call(ctx, step.path, step.req, nil); err != nil {
			t.Fatalf("enable etcd authentication, step %d (%s): %v", i+1, step.path, err)
		}
	}
}

// Log is what the server printed.
func (s *Server) Log() string { return s.log.String() }

func freePort(t testing.TB, host string) int {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// makeCerts writes a CA, a server certificate for 127.0.0.1 and client
// certificates it signed (one without a Common Name, one with), and a
// second, unrelated CA.
func (s *Server) makeCerts(t testing.TB, dir string) {
	t.Helper()
	caKey, caCert := newCA(t, "pplaunch test CA")
	_, otherCert := newCA(t, "another CA")
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	s.CACert = write("ca.pem", "CERTIFICATE", caCert.Raw)
	s.OtherCA = write("other-ca.pem", "CERTIFICATE", otherCert.Raw)
	for _, leaf := range []struct {
		file, cn  string
		usage     x509.ExtKeyUsage
		cert, key *string
	}{
		{"server", "server", x509.ExtKeyUsageServerAuth, new(string), new(string)},
		{"client", "", x509.ExtKeyUsageClientAuth, &s.Cert, &s.Key},
		{"named-client", "trainer", x509.ExtKeyUsageClientAuth, &s.NamedCert, &s.NamedKey},
	} {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: leaf.cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{leaf.usage, x509.ExtKeyUsageClientAuth},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		*leaf.cert = write(leaf.file+".pem", "CERTIFICATE", der)
		*leaf.key = write(leaf.file+"-key.pem", "EC PRIVATE KEY", kder)
		if _, err := tls.LoadX509KeyPair(*leaf.cert, *leaf.key); err != nil {
			t.Fatal(err)
		}
	}
}

func newCA(t testing.TB, name string) (*ecdsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return k, c
}

// lockedBuffer is the server's output, written by the process and read by
// the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Context is a test's context with a 20 s hang guard, cancelled when the
// test ends.
func Context(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}
