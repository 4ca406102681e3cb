package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Grant makes a lease of ttl seconds and returns its id.
func (c *Client) Grant(ctx context.Context, ttl int64) (int64, error) {
	var resp struct {
		ID    int64  `json:"ID,string"`
		TTL   int64  `json:"TTL,string"`
		Error string `json:"error"`
	}
	if err := c.Call(ctx, "lease/grant", map[string]string{"TTL": fmt.Sprint(ttl)}, &resp); err != nil {
		return 0, err
	}
	if resp.Error != "" {
		return 0, serverError(resp.Error)
	}
	return resp.ID, nil
}

// Revoke ends lease id, deleting every key bound to it.
func (c *Client) Revoke(ctx context.Context, id int64) error {
	return c.Call(ctx, "lease/revoke", map[string]string{"ID": fmt.Sprint(id)}, nil)
}

// KeepAliveOnce renews lease id and returns the seconds it has left;
// ErrLeaseNotFound: it lapsed or was revoked.
func (c *Client) KeepAliveOnce(ctx context.Context, id int64) (int64, error) {
	// The gateway answers a keep-alive stream of one request with one
	// message.
	var resp struct {
		Result struct {
			TTL int64 `json:"TTL,string"`
		} `json:"result"`
		Error *statusBody `json:"error"`
	}
	if err := c.Call(ctx, "lease/keepalive", map[string]string{"ID": fmt.Sprint(id)}, &resp); err != nil {
		return 0, err
	}
	if resp.Error != nil {
		return 0, serverError(resp.Error.text())
	}
	if resp.Result.TTL <= 0 {
		return 0, ErrLeaseNotFound
	}
	return resp.Result.TTL, nil
}

// KeepAlive renews lease id, which has ttl seconds left now (as granted,
// or as KeepAliveOnce said), every third of its time to live until ctx ends
// (it returns ctx's error) or the lease is gone: it lapsed or was revoked
// (ErrLeaseNotFound), or etcd did not answer for as long as it had left.
func (c *Client) KeepAlive(ctx context.Context, id, ttl int64) error {
	renewed := time.Now()
	wait := max(time.Duration(ttl)*time.Second/3, 100*time.Millisecond)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		actx, cancel := context.WithTimeout(ctx, max(time.Duration(ttl)*time.Second/3, time.Second))
		left, err := c.KeepAliveOnce(actx, id)
		cancel()
		switch {
		case err == nil:
			ttl, renewed = left, time.Now()
			wait = max(time.Duration(ttl)*time.Second/3, 100*time.Millisecond)
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, ErrLeaseNotFound):
			return err
		case time.Since(renewed) > time.Duration(ttl)*time.Second:
			return fmt.Errorf("lease %x lapsed: no keep-alive answered for %v (%w)", id, time.Duration(ttl)*time.Second, err)
		default:
			wait = 250 * time.Millisecond // etcd unreachable for now: try again soon
		}
	}
}
