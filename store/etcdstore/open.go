package etcdstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/pplaunch/pplaunch/store/etcdstore/gateway"
)

// Options says which etcd to reach, how, and as which member of which run.
type Options struct {
	Endpoints []string // HOST:PORT of the cluster's client URLs
	Prefix    string   // every key of the run lives under it: "/pplaunch/RUN-ID/"
	Node      int      // this agent's node rank: its key "members/NODE"
	Info      string   // the member key's value, for a duplicate's error ("host pid 123")

	// TLS: the CA that signed the servers' certificates, and this client's
	// certificate and key (for servers that ask for one). Empty: plain TCP,
	// unless CACert is given.
	CACert, Cert, Key string
	// User and Password, for a cluster with authentication enabled.
	User, Password string

	// ReachWithin bounds the first contact: an endpoint that does not answer
	// by then is an error.
	ReachWithin time.Duration
	// MemberTTL is how long a dead agent's member key outlives it (etcd
	// grants at least about 2 s on its default timings).
	MemberTTL time.Duration
	// RunTTL is how long the run's keys outlive its last agent when it did
	// not close (killed).
	RunTTL time.Duration
}

// Store is one agent's connection to etcd: a store.Store over the run's
// prefix, and its membership. Safe for concurrent use.
type Store struct {
	cli  *gateway.Client
	o    Options
	pfx  string
	run  int64           // the run lease every key but the members' is bound to
	ctx  context.Context // ends at Close: stops the keep-alives
	stop context.CancelFunc

	mu     sync.Mutex
	member int64 // this agent's member lease (renewed after a lapse)
	done   bool
	wg     sync.WaitGroup
}

const (
	memberDir = "members/"
	leaseKey  = "lease"
	leftValue = "left" // a member key's value once its agent left on purpose
)

// Open connects to etcd, joins the run's membership as node o.Node and the
// run lease. Every error says what was wrong and which option fixes it.
func Open(ctx context.Context, o Options) (*Store, error) {
	if len(o.Endpoints) == 0 {
		return nil, errors.New("etcd: no endpoint: give --rdzv-endpoint HOST:2379")
	}
	if o.MemberTTL <= 0 {
		o.MemberTTL = 3 * time.Second
	}
	if o.RunTTL <= 0 {
		o.RunTTL = 10 * time.Second
	}
	if o.ReachWithin <= 0 {
		o.ReachWithin = 30 * time.Second
	}
	tc, err := tlsConfig(o)
	if err != nil {
		return nil, err
	}
	cli := gateway.New(gateway.Config{Endpoints: o.Endpoints, TLS: tc, Username: o.User, Password: o.Password,
		DialTimeout: min(o.ReachWithin, 5*time.Second)})
	s := &Store{cli: cli, o: o, pfx: o.Prefix}
	s.ctx, s.stop = context.WithCancel(context.WithoutCancel(ctx))
	if err := s.reach(ctx); err != nil {
		cli.Close()
		return nil, err
	}
	if err := s.joinMembers(ctx); err != nil {
		s.stop()
		cli.Close()
		return nil, err
	}
	if err := s.joinRun(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// tlsConfig reads the TLS files, naming the option of one that cannot be read.
func tlsConfig(o Options) (*tls.Config, error) {
	if o.CACert == "" && o.Cert == "" && o.Key == "" {
		return nil, nil
	}
	if (o.Cert == "") != (o.Key == "") {
		return nil, fmt.Errorf("etcd TLS: --rdzv-conf cert= and key= go together (the client certificate and its private key); give both or neither")
	}
	for _, f := range [][2]string{{"cacert", o.CACert}, {"cert", o.Cert}, {"key", o.Key}} {
		if f[1] == "" {
			continue
		}
		if _, err := os.Stat(f[1]); err != nil {
			return nil, fmt.Errorf("etcd TLS: --rdzv-conf %s=%s: %v", f[0], f[1], err)
		}
	}
	return clientTLS(o)
}

// reach asks etcd for the run's lease key until it answers or ReachWithin
// passes (the client connects at its first request: this is it).
func (s *Store) reach(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.o.ReachWithin)
	defer cancel()
	for {
		actx, acancel := context.WithTimeout(ctx, time.Second)
		_, err := s.cli.Get(actx, s.pfx+leaseKey)
		acancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || !retryable(err) {
			if why := probe(s.o); why != nil {
				return why
			}
			return explain(s.o, err)
		}
		select { // refused at once: a moment before the next try
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// retryable is an error of an endpoint that may answer later.
func retryable(err error) bool {
	var ge *gateway.Error
	return errors.Is(err, context.DeadlineExceeded) || isTransient(err) || errors.As(err, &ge) && ge.Code == codeUnavailable ||
		strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "no such host")
}

// codeUnavailable is gRPC's status code of a server not ready to answer
// (no leader yet).
const codeUnavailable = 14

// explain turns a client error into what was wrong and how to fix it.
func explain(o Options, err error) error {
	at := strings.Join(o.Endpoints, ",")
	msg := err.Error()
	switch {
	case errors.Is(err, gateway.ErrAuthFailed) || strings.Contains(msg, "authentication failed"):
		return fmt.Errorf("etcd at %s refused user %q: %v: check --rdzv-conf user= and password= (or %s)", at, o.User, err, EnvPassword)
	case errors.Is(err, gateway.ErrUserEmpty) || errors.Is(err, gateway.ErrInvalidAuthToken) || errors.Is(err, gateway.ErrPermissionDenied):
		return fmt.Errorf("etcd at %s: %v: the cluster has authentication enabled; give --rdzv-conf user=NAME and the password (password= or %s), for a user whose role may read and write %s", at, err, EnvPassword, o.Prefix)
	case errors.Is(err, gateway.ErrCommonName):
		return fmt.Errorf("etcd at %s refused the client certificate %s: it has a Common Name, which etcd's JSON gateway (what pplaunch speaks) cannot pass on "+
			"while authentication is on (%v): give --rdzv-conf cert= and key= a client certificate without a Common Name; the user is user=", at, o.Cert, err)
	case strings.Contains(msg, "x509") || strings.Contains(msg, "tls:") || strings.Contains(msg, "certificate"):
		return fmt.Errorf("etcd at %s: TLS failed: %v: check --rdzv-conf cacert= (the CA that signed the server's certificate) and, if the server asks for client certificates, cert= and key=", at, err)
	case strings.Contains(msg, "first record does not look like a TLS handshake") || strings.Contains(msg, "EOF") && o.CACert != "":
		return fmt.Errorf("etcd at %s: %v: the server speaks plain TCP; drop --rdzv-conf cacert=, cert= and key=", at, err)
	case errors.Is(err, context.DeadlineExceeded) || strings.Contains(msg, "connection refused"):
		hint := ""
		if o.CACert == "" {
			hint = "; if it serves TLS, give --rdzv-conf cacert=FILE"
		}
		return fmt.Errorf("etcd at %s: not reachable within %v (%v): check --rdzv-endpoint (HOST:PORT of an etcd client URL, port 2379 by default) and that etcd runs there%s",
			at, o.ReachWithin, err, hint)
	}
	return fmt.Errorf("etcd at %s: %w", at, err)
}

// EnvPassword is where the agent reads the etcd password when --rdzv-conf
// does not give it (so that it stays off the command line).
const EnvPassword = "PPLAUNCH_RDZV_PASSWORD"

// Close leaves the run: this agent's member key says so, then goes with its
// lease; the last member to leave revokes the run lease, which deletes every
// key of the run.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return nil
	}
	s.done = true
	s.mu.Unlock()
	s.stop() // the keep-alives first: they would renew what is revoked below
	s.wg.Wait()
	member := s.member // no keep-alive renews it now
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	key := s.memberKey(s.o.Node)
	if member != 0 {
		s.cli.Put(ctx, key, leftValue, member)
		s.cli.Revoke(ctx, member)
	}
	if s.run != 0 {
		// Every member writes before it reads: of two leaving at once, the
		// later reader sees the other gone, so one of them revokes.
		q := gateway.Prefix(s.pfx + memberDir)
		q.CountOnly = true
		if r, err := s.cli.Range(ctx, q); err == nil && r.Count == 0 {
			s.cli.Revoke(ctx, s.run)
		}
	}
	return s.cli.Close()
}
