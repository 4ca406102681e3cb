package gateway

import (
	"context"
	"encoding/json"
	"fmt"
)

// authToken is the token for a request to path: none without a user;
// otherwise the one held, or a new one from etcd.
func (c *Client) authToken(ctx context.Context, path string) (string, error) {
	if c.cfg.Username == "" || path == authPath {
		return "", nil
	}
	c.mu.Lock()
	defer c.mu.Unlock() // one authentication at a time: the others wait for its token
	if c.token != "" {
		return c.token, nil
	}
	b, err := json.Marshal(map[string]string{"name": c.cfg.Username, "password": c.cfg.Password})
	if err != nil {
		return "", err
	}
	body, err := c.send(ctx, authPath, b, "")
	if err != nil {
		return "", err
	}
	defer body.Close()
	var r struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(body).Decode(&r); err != nil || r.Token == "" {
		return "", fmt.Errorf("authenticate as %q: no token in etcd's answer (%v)", c.cfg.Username, err)
	}
	c.token = r.Token
	return c.token, nil
}

const authPath = "auth/authenticate"

// forget drops token, so that the next request authenticates again.
func (c *Client) forget(token string) {
	c.mu.Lock()
	if c.token == token {
		c.token = ""
	}
	c.mu.Unlock()
}
