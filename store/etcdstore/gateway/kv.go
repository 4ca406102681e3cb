package gateway

import (
	"context"
	"encoding/json"
	"strconv"
)

// Header is every answer's header; Revision is the store's revision when
// etcd answered.
type Header struct {
	Revision int64 `json:"revision,string"`
}

// KeyValue is a key as etcd holds it.
type KeyValue struct {
	Key            []byte `json:"key"`
	Value          []byte `json:"value"`
	CreateRevision int64  `json:"create_revision,string"`
	ModRevision    int64  `json:"mod_revision,string"`
	Version        int64  `json:"version,string"`
	Lease          int64  `json:"lease,string"` // 0: none
}

// RangeRequest reads Key, or every key from Key up to RangeEnd (exclusive).
type RangeRequest struct {
	Key       []byte `json:"key"`
	RangeEnd  []byte `json:"range_end,omitempty"`
	Revision  int64  `json:"revision,omitempty,string"` // 0: the latest
	KeysOnly  bool   `json:"keys_only,omitempty"`
	CountOnly bool   `json:"count_only,omitempty"`
}

// Key reads one key.
func Key(k string) RangeRequest { return RangeRequest{Key: []byte(k)} }

// Prefix reads every key that starts with p.
func Prefix(p string) RangeRequest { return RangeRequest{Key: []byte(p), RangeEnd: PrefixEnd(p)} }

// PrefixEnd is the range end that covers every key starting with p.
func PrefixEnd(p string) []byte {
	end := []byte(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return []byte{0} // every key (p empty or all 0xff)
}

// RangeResponse is what a range read found.
type RangeResponse struct {
	Header Header     `json:"header"`
	Kvs    []KeyValue `json:"kvs"`
	Count  int64      `json:"count,string"`
}

// Range reads the keys r names.
func (c *Client) Range(ctx context.Context, r RangeRequest) (*RangeResponse, error) {
	var resp RangeResponse
	return &resp, c.Call(ctx, "kv/range", r, &resp)
}

// Get reads key.
func (c *Client) Get(ctx context.Context, key string) (*RangeResponse, error) {
	return c.Range(ctx, Key(key))
}

// PutRequest writes Value at Key, bound to Lease (0: none).
type PutRequest struct {
	Key   []byte `json:"key"`
	Value []byte `json:"value,omitempty"`
	Lease int64  `json:"lease,omitempty,string"`
}

// Put writes value at key, bound to lease (0: none).
func (c *Client) Put(ctx context.Context, key, value string, lease int64) (*Header, error) {
	var resp struct {
		Header Header `json:"header"`
	}
	return &resp.Header, c.Call(ctx, "kv/put", PutRequest{Key: []byte(key), Value: []byte(value), Lease: lease}, &resp)
}

// DeleteRangeRequest deletes Key, or every key from Key up to RangeEnd.
type DeleteRangeRequest struct {
	Key      []byte `json:"key"`
	RangeEnd []byte `json:"range_end,omitempty"`
}

// DeleteResponse says how many keys a delete removed.
type DeleteResponse struct {
	Header  Header `json:"header"`
	Deleted int64  `json:"deleted,string"`
}

// Delete deletes key.
func (c *Client) Delete(ctx context.Context, key string) (*DeleteResponse, error) {
	var resp DeleteResponse
	return &resp, c.Call(ctx, "kv/deleterange", DeleteRangeRequest{Key: []byte(key)}, &resp)
}

// Compare is a transaction's condition: Key's Target equals the value
// given. Made by VersionIs, ModRevisionIs and ValueIs.
type Compare struct {
	Key    []byte
	Target string // VERSION, MOD or VALUE
	Number int64  // VERSION, MOD
	Value  []byte // VALUE
}

// VersionIs holds when key has been written n times since it was created
// (0: it does not exist).
func VersionIs(key string, n int64) Compare {
	return Compare{Key: []byte(key), Target: "VERSION", Number: n}
}

// ModRevisionIs holds when key was last written at revision rev (0: it
// does not exist).
func ModRevisionIs(key string, rev int64) Compare {
	return Compare{Key: []byte(key), Target: "MOD", Number: rev}
}

// ValueIs holds when key holds v.
func ValueIs(key string, v []byte) Compare {
	return Compare{Key: []byte(key), Target: "VALUE", Value: v}
}

// MarshalJSON writes the condition with its target's field set (etcd
// compares a VALUE only against a value that is there, even empty).
func (c Compare) MarshalJSON() ([]byte, error) {
	m := map[string]any{"result": "EQUAL", "target": c.Target, "key": c.Key}
	switch c.Target {
	case "VALUE":
		m["value"] = append([]byte{}, c.Value...)
	case "MOD":
		m["mod_revision"] = strconv.FormatInt(c.Number, 10)
	default:
		m["version"] = strconv.FormatInt(c.Number, 10)
	}
	return json.Marshal(m)
}

// RequestOp is one operation of a transaction: one field set.
type RequestOp struct {
	Range  *RangeRequest       `json:"request_range,omitempty"`
	Put    *PutRequest         `json:"request_put,omitempty"`
	Delete *DeleteRangeRequest `json:"request_delete_range,omitempty"`
}

// TxnRequest does Success if every Compare holds, Failure otherwise.
type TxnRequest struct {
	Compare []Compare   `json:"compare"`
	Success []RequestOp `json:"success,omitempty"`
	Failure []RequestOp `json:"failure,omitempty"`
}

// ResponseOp is one operation's answer; only ranges' are read here.
type ResponseOp struct {
	Range *RangeResponse `json:"response_range"`
}

// TxnResponse says which branch ran, and its operations' answers.
type TxnResponse struct {
	Header    Header       `json:"header"`
	Succeeded bool         `json:"succeeded"`
	Responses []ResponseOp `json:"responses"`
}

// Kvs is what the transaction's range operation i found (none: nil).
func (t *TxnResponse) Kvs(i int) []KeyValue {
	if i >= len(t.Responses) || t.Responses[i].Range == nil {
		return nil
	}
	return t.Responses[i].Range.Kvs
}

// Txn runs a transaction.
func (c *Client) Txn(ctx context.Context, t TxnRequest) (*TxnResponse, error) {
	var resp TxnResponse
	return &resp, c.Call(ctx, "kv/txn", t, &resp)
}
