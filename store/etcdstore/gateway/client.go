package gateway

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config says which etcd to reach and how.
type Config struct {
	Endpoints []string    // HOST:PORT, or a URL (http://HOST:PORT, https://HOST:PORT)
	TLS       *tls.Config // nil: plain HTTP (unless an endpoint says https://)
	// Username and Password, for a cluster with authentication enabled.
	Username, Password string
	// DialTimeout bounds each TCP connection's set-up (and its TLS
	// handshake); 0: 5 s.
	DialTimeout time.Duration
}

// Client talks to one etcd cluster. Safe for concurrent use.
type Client struct {
	hc   *http.Client
	urls []string // base URLs, one per endpoint
	cur  atomic.Int32
	cfg  Config
	ctx  context.Context // ends at Close: ends every request and watch
	stop context.CancelFunc

	mu    sync.Mutex
	token string // the authentication token, once authenticated
}

// New makes a client; it connects at its first request.
func New(cfg Config) *Client {
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	d := &net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext, TLSClientConfig: cfg.TLS, TLSHandshakeTimeout: cfg.DialTimeout,
		MaxIdleConnsPerHost: 32, IdleConnTimeout: 90 * time.Second}
	c := &Client{hc: &http.Client{Transport: tr}, cfg: cfg}
	for _, ep := range cfg.Endpoints {
		c.urls = append(c.urls, baseURL(ep, cfg.TLS != nil))
	}
	c.ctx, c.stop = context.WithCancel(context.Background())
	return c
}

func baseURL(ep string, tls bool) string {
	if strings.HasPrefix(ep, "http://") || strings.HasPrefix(ep, "https://") {
		return strings.TrimSuffix(ep, "/")
	}
	if tls {
		return "https://" + ep
	}
	return "http://" + ep
}

// Close ends every request and watch in flight and drops the connections.
func (c *Client) Close() error {
	c.stop()
	c.hc.CloseIdleConnections()
	return nil
}

// Call POSTs req as JSON to path (under /v3/: "kv/range") and decodes the
// answer into resp: the whole API, for what has no method here.
func (c *Client) Call(ctx context.Context, path string, req, resp any) error {
	body, err := c.post(ctx, path, req)
	if err != nil {
		return err
	}
	defer func() {
		// Read to the end, so that the connection serves the next request
		// (a body closed before its end closes its connection too).
		io.Copy(io.Discard, io.LimitReader(body, 1<<16))
		body.Close()
	}()
	if resp == nil {
		return nil
	}
	if err := json.NewDecoder(body).Decode(resp); err != nil {
		return fmt.Errorf("the answer to POST /v3/%s is not the JSON expected of etcd: %v", path, err)
	}
	return nil
}

// post sends req to path, authenticated when the client has a user, on the
// current endpoint or (that one unreachable) the next ones; it returns the
// body of a 200 answer, every other answer as an error.
func (c *Client) post(ctx context.Context, path string, req any) (io.ReadCloser, error) {
	ctx, cancel := c.join(ctx)
	b, err := json.Marshal(req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("etcd: encode the request to /v3/%s: %v", path, err)
	}
	for reauth := 0; ; reauth++ {
		token, err := c.authToken(ctx, path)
		if err != nil {
			cancel()
			return nil, err
		}
		body, err := c.send(ctx, path, b, token)
		if errors.Is(err, ErrInvalidAuthToken) && token != "" && reauth == 0 {
			c.forget(token) // expired (etcd forgets idle tokens): authenticate again
			continue
		}
		if err != nil {
			cancel()
			return nil, err
		}
		return cancelOnClose{body, cancel}, nil
	}
}

// send tries each endpoint from the current one until one answers.
func (c *Client) send(ctx context.Context, path string, b []byte, token string) (io.ReadCloser, error) {
	err := errors.New("no etcd endpoint given")
	for range len(c.urls) {
		i := int(c.cur.Load())
		var body io.ReadCloser
		body, err = c.sendTo(ctx, c.urls[i], path, b, token)
		var he *Error
		if err == nil || errors.As(err, &he) || ctx.Err() != nil {
			return body, err
		}
		c.cur.CompareAndSwap(int32(i), int32((i+1)%len(c.urls))) // unreachable: the next endpoint
	}
	return nil, err
}

func (c *Client) sendTo(ctx context.Context, base, path string, b []byte, token string) (io.ReadCloser, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v3/"+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	if token != "" {
		hr.Header.Set("Authorization", token)
	}
	r, err := c.hc.Do(hr)
	if err != nil {
		return nil, err
	}
	if r.StatusCode == http.StatusOK {
		return r.Body, nil
	}
	defer r.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(r.Body, 4096))
	return nil, answerError(base, path, r.StatusCode, msg)
}

// join is ctx, ended too when the client closes.
func (c *Client) join(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(c.ctx, cancel)
	return ctx, func() { unhook(); cancel() }
}

// cancelOnClose ends a request's context once its body is read and closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
