package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct{ prefix, end string }{
		{"/pplaunch/run/", "/pplaunch/run0"},
		{"a", "b"},
		{"a\xff", "b"},
		{"\xff\xff", "\x00"},
		{"", "\x00"},
	} {
		if got := string(PrefixEnd(tc.prefix)); got != tc.end {
			t.Errorf("PrefixEnd(%q) = %q, want %q", tc.prefix, got, tc.end)
		}
	}
}

// TestRequestJSON: the requests as the gateway reads them (proto field
// names, bytes in base64, int64 as strings, a VALUE compare's value there
// even when empty).
func TestRequestJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  any
		want string
	}{
		{"range of a prefix, keys only", RangeRequest{Key: []byte("a/"), RangeEnd: PrefixEnd("a/"), KeysOnly: true},
			`{"key":"YS8=","range_end":"YTA=","keys_only":true}`},
		{"put with a lease", PutRequest{Key: []byte("k"), Value: []byte("v"), Lease: 7587869497063449109},
			`{"key":"aw==","value":"dg==","lease":"7587869497063449109"}`},
		{"put of an empty value", PutRequest{Key: []byte("k")}, `{"key":"aw=="}`},
		{"absent", VersionIs("k", 0), `{"key":"aw==","result":"EQUAL","target":"VERSION","version":"0"}`},
		{"unchanged since", ModRevisionIs("k", 42), `{"key":"aw==","mod_revision":"42","result":"EQUAL","target":"MOD"}`},
		{"holds empty", ValueIs("k", nil), `{"key":"aw==","result":"EQUAL","target":"VALUE","value":""}`},
		{"watch from", WatchRequest{Key: []byte("k"), StartRevision: 9}, `{"key":"aw==","start_revision":"9"}`},
		{"txn", TxnRequest{Compare: []Compare{VersionIs("k", 0)}, Success: []RequestOp{{Put: &PutRequest{Key: []byte("k")}}},
			Failure: []RequestOp{{Range: &RangeRequest{Key: []byte("k")}}}},
			`{"compare":[{"key":"aw==","result":"EQUAL","target":"VERSION","version":"0"}],"success":[{"request_put":{"key":"aw=="}}],"failure":[{"request_range":{"key":"aw=="}}]}`},
	} {
		b, err := json.Marshal(tc.req)
		if err != nil || string(b) != tc.want {
			t.Errorf("%s: %s, %v; want %s", tc.name, b, err, tc.want)
		}
	}
}

// TestAnswerError: etcd's error answers (3.4 and 3.5 write error, message
// and code; 3.6 code and message) keep etcd's message and match its
// sentinel; an answer that is not etcd's says what the endpoint is not.
func TestAnswerError(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		is     error
		want   []string
	}{
		{"etcd 3.4", 404, `{"error":"etcdserver: requested lease not found","message":"etcdserver: requested lease not found","code":5}`,
			ErrLeaseNotFound, []string{"etcdserver: requested lease not found"}},
		{"etcd 3.6", 400, `{"code":11,"message":"etcdserver: mvcc: required revision has been compacted","details":[]}`,
			ErrCompacted, []string{"compacted"}},
		{"no gateway", 404, "Not Found", nil, []string{"POST http://127.0.0.1:2379/v3/kv/range", "no v3 JSON gateway", "--enable-grpc-gateway"}},
		{"a client certificate's common name", 400, ErrCommonName.Message + "\n", ErrCommonName, []string{"CommonName"}},
		{"plain HTTP to TLS", 400, "Client sent an HTTP request to an HTTPS server.\n", nil,
			[]string{"HTTP 400 Bad Request", "HTTPS server", "not an etcd answer"}},
	} {
		err := answerError("http://127.0.0.1:2379", "kv/range", tc.status, []byte(tc.body))
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: %v is not %v", tc.name, err, tc.is)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v; want it to say %q", tc.name, err, w)
			}
		}
	}
}

func TestNoEndpoint(t *testing.T) {
	c := New(Config{})
	defer c.Close()
	if _, err := c.Get(context.Background(), "k"); err == nil || !strings.Contains(err.Error(), "no etcd endpoint") {
		t.Errorf("a client of no endpoint: %v; want it to say so", err)
	}
}
