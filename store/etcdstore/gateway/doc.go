// Package gateway is a client of etcd's v3 API through its JSON gateway: the
// HTTP/JSON face that every etcd since 3.4 serves on its client URLs beside
// gRPC, at /v3/ (3.4 serves /v3beta/ too; 3.5 and 3.6 only /v3/). Requests
// are POSTs of the API's messages as JSON (proto field names, keys and
// values base64, 64-bit integers as strings); a watch is one long response,
// a stream of JSON objects.
//
// It is what etcdstore needs and no more: ranges, puts, deletes and
// transactions on keys, leases (grant, keep-alive, revoke), watches, and
// password authentication (a token from /v3/auth/authenticate in each
// request's Authorization header), over net/http and encoding/json only, with
// TLS and client certificates through a tls.Config. Call reaches the rest of
// the API (the tests' user and role set-up).
//
// Why not etcd's own Go client: it links gRPC and protobuf, whose package
// initialisation costs every process of the binary about 1.1-1.3 ms before
// main (GODEBUG=inittrace=1: protobuf 0.55 ms, etcd's API 0.25, gRPC 0.18,
// genproto 0.14), whether or not the process ever talks to etcd; the launcher
// starts within 1.3x of one without it only if they are gone.
//
// It imports only the standard library; only etcdstore and its test server
// etcdtest import it.
package gateway
