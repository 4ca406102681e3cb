package etcdstore

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// clientTLS reads the TLS files into the client's configuration, naming the
// option of a file that is not what it should be, before any connection.
func clientTLS(o Options) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CACert != "" {
		b, err := os.ReadFile(o.CACert)
		if err != nil {
			return nil, fmt.Errorf("etcd TLS: --rdzv-conf cacert=%s: %v", o.CACert, err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("etcd TLS: --rdzv-conf cacert=%s: no PEM certificate in it (want PEM files: the CA certificate, the client certificate and its key)", o.CACert)
		}
	}
	if o.Cert != "" {
		cert, err := tls.LoadX509KeyPair(o.Cert, o.Key)
		if err != nil {
			return nil, fmt.Errorf("etcd TLS: --rdzv-conf cert=%s key=%s: %v (want PEM files: the client certificate and its private key)", o.Cert, o.Key, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// probe says why the first endpoint does not answer, where a plain
// connection and a TLS handshake can tell better than the request's error: nothing listening, a certificate the CA did not sign,
// a client certificate refused or missing, TLS on one side only. nil: no
// finding.
func probe(o Options) error {
	at := strings.TrimPrefix(strings.TrimPrefix(o.Endpoints[0], "https://"), "http://")
	conn, err := net.DialTimeout("tcp", at, time.Second)
	if err != nil {
		return fmt.Errorf("etcd at %s: not reachable within %v (%v): check --rdzv-endpoint (HOST:PORT of an etcd client URL, port 2379 by default) and that etcd runs there", at, o.ReachWithin, err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	tc, _ := tlsConfig(o)
	if tc == nil {
		// Does the server speak TLS?
		if tls.Client(conn, &tls.Config{InsecureSkipVerify: true}).Handshake() == nil {
			return fmt.Errorf("etcd at %s serves TLS: give --rdzv-conf cacert=FILE (the CA that signed its certificate) and, if it asks for client certificates, cert=FILE,key=FILE", at)
		}
		return nil
	}
	tc = tc.Clone()
	if tc.ServerName == "" {
		tc.ServerName, _, _ = net.SplitHostPort(at)
	}
	tconn := tls.Client(conn, tc)
	if err := tconn.Handshake(); err != nil {
		return tlsFailure(o, at, err)
	}
	// With TLS 1.3 a refused client certificate shows at the first read.
	tconn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := tconn.Read(make([]byte, 1)); err != nil {
		if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			return tlsFailure(o, at, err)
		}
	}
	return nil
}

func tlsFailure(o Options, at string, err error) error {
	if _, ok := err.(tls.RecordHeaderError); ok {
		return fmt.Errorf("etcd at %s: %v: the server speaks plain TCP; drop --rdzv-conf cacert=, cert= and key=", at, err)
	}
	fix := "check --rdzv-conf cacert= (the CA that signed the server's certificate)"
	if o.Cert == "" {
		fix += "; if the server asks for client certificates, give cert= and key="
	} else {
		fix += " and cert=, key= (a client certificate the server's CA signed)"
	}
	return fmt.Errorf("etcd at %s: TLS failed: %v: %s", at, err, fix)
}
