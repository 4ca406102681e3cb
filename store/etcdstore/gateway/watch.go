package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// EventType is what a watch event did to its key.
type EventType string

const (
	Put    EventType = "PUT"
	Delete EventType = "DELETE"
)

// Event is one change of a watched key.
type Event struct {
	Type EventType `json:"type"` // etcd leaves PUT (its zero) out; Watch fills it in
	Kv   KeyValue  `json:"kv"`
}

// WatchRequest watches Key, or every key from Key up to RangeEnd, for the
// changes from revision StartRevision on (0: from now).
type WatchRequest struct {
	Key           []byte `json:"key"`
	RangeEnd      []byte `json:"range_end,omitempty"`
	StartRevision int64  `json:"start_revision,omitempty,string"`
}

// WatchResponse is one batch of changes, or (Err set, the last on its
// channel) why the watch ended before its context did.
type WatchResponse struct {
	Header          Header  `json:"header"`
	Events          []Event `json:"events"`
	Canceled        bool    `json:"canceled"`
	CompactRevision int64   `json:"compact_revision,string"`
	CancelReason    string  `json:"cancel_reason"`
	Err             error   `json:"-"`
}

// watchRetryFor is how long a broken watch stream is reopened (from the
// revision after the last change it delivered) before the watch fails.
const watchRetryFor = 10 * time.Second

// Watch reports the changes r asks for, in order, until ctx ends or the
// client closes: then the channel closes. A stream that breaks is reopened
// where it left off; one etcd ends (its history compacted past the
// revision asked for, a permission taken away) or that cannot be reopened
// within 10 s ends with a WatchResponse whose Err says why.
func (c *Client) Watch(ctx context.Context, r WatchRequest) <-chan WatchResponse {
	ch := make(chan WatchResponse)
	go c.watch(ctx, r, ch)
	return ch
}

func (c *Client) watch(ctx context.Context, r WatchRequest, ch chan<- WatchResponse) {
	defer close(ch)
	ctx, cancel := c.join(ctx)
	defer cancel()
	var broke time.Time // when the stream broke, and nothing came since
	for {
		next, final, err := c.watchStream(ctx, r, ch)
		if ctx.Err() != nil {
			return
		}
		if next > r.StartRevision {
			r.StartRevision, broke = next, time.Time{}
		}
		if broke.IsZero() {
			broke = time.Now()
		}
		if final || time.Since(broke) > watchRetryFor {
			if !final {
				err = fmt.Errorf("watch %q broke and could not be reopened within %v: %w", r.Key, watchRetryFor, err)
			}
			send(ctx, ch, WatchResponse{Err: err})
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// watchStream opens one watch stream and passes its changes on until it
// ends. next: the revision to resume from (0: none delivered); final: etcd
// ended the watch, or refused it.
func (c *Client) watchStream(ctx context.Context, r WatchRequest, ch chan<- WatchResponse) (next int64, final bool, err error) {
	body, err := c.post(ctx, "watch", map[string]any{"create_request": r})
	if err != nil {
		var e *Error
		return 0, errors.As(err, &e), err
	}
	defer body.Close()
	dec := json.NewDecoder(body)
	for {
		var m struct {
			Result *WatchResponse `json:"result"`
			Error  *statusBody    `json:"error"`
		}
		if err := dec.Decode(&m); err != nil {
			return next, false, err
		}
		if m.Error != nil { // the stream broke on etcd's side (a leader lost, ...)
			return next, false, serverError(m.Error.text())
		}
		wr := m.Result
		switch {
		case wr == nil:
			continue
		case wr.Canceled:
			return next, true, c.canceled(r, wr)
		case len(wr.Events) == 0: // the watch's creation, or a progress report
			if next == 0 && r.StartRevision == 0 {
				next = wr.Header.Revision + 1 // a reopened stream starts after it
			}
			continue
		}
		for i := range wr.Events {
			if wr.Events[i].Type == "" {
				wr.Events[i].Type = Put
			}
		}
		next = wr.Events[len(wr.Events)-1].Kv.ModRevision + 1
		if !send(ctx, ch, *wr) {
			return next, true, ctx.Err()
		}
	}
}

// canceled is why etcd ended the watch r.
func (c *Client) canceled(r WatchRequest, wr *WatchResponse) error {
	if wr.CompactRevision > 0 {
		return fmt.Errorf("watch %q from revision %d: etcd has compacted its history up to revision %d, so the changes in between are gone (%w): "+
			"etcd compacts too eagerly for this run (its --auto-compaction-retention); keep more history, or start the run again", r.Key, r.StartRevision, wr.CompactRevision, ErrCompacted)
	}
	if wr.CancelReason != "" {
		return fmt.Errorf("watch %q cancelled by etcd: %w", r.Key, serverError(wr.CancelReason))
	}
	return fmt.Errorf("watch %q cancelled by etcd, without a reason", r.Key)
}

func send(ctx context.Context, ch chan<- WatchResponse, wr WatchResponse) bool {
	select {
	case ch <- wr:
		return true
	case <-ctx.Done():
		return false
	}
}
