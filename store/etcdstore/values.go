package etcdstore

import (
	"context"
	"strings"

	"github.com/pplaunch/pplaunch/store/etcdstore/gateway"
)

// Values reports to f every key under dir (relative to the run's prefix)
// with its value, first as they are now, then each write as etcd has it,
// until ctx ends: a watch where the built-in store would be polled.
func (s *Store) Values(ctx context.Context, dir string, f func(key string, value []byte)) error {
	r, err := s.cli.Range(ctx, gateway.Prefix(s.pfx+dir))
	if err != nil {
		return s.fail("read", dir, err)
	}
	for _, kv := range r.Kvs {
		f(strings.TrimPrefix(string(kv.Key), s.pfx), kv.Value)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for wr := range s.cli.Watch(wctx, watchUnder(s.pfx+dir, r.Header.Revision+1)) {
		if wr.Err != nil {
			return s.fail("watch", dir, wr.Err)
		}
		for _, ev := range wr.Events {
			if ev.Type == gateway.Put {
				f(strings.TrimPrefix(string(ev.Kv.Key), s.pfx), ev.Kv.Value)
			}
		}
	}
	return ctx.Err()
}
