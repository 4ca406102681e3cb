// Package etcdstore is the agents' rendezvous over an etcd cluster (etcd's v3
// API, through its JSON gateway: package gateway): a store.Store
// whose keys all live under one prefix per run ("/pplaunch/RUN-ID/"), and the
// run's membership as leases.
//
// Two kinds of lease carry a run. Each agent holds a member lease bound to its
// key "members/NODE": when the agent dies, the lease lapses, the key goes and
// every other agent learns it by watch (Members). Every other key of the run
// is bound to one run lease that all its agents keep alive: when the last of
// them goes, cleanly (it revokes the lease) or not (the lease lapses), the run
// leaves nothing behind in etcd. Blocking reads (Get, Wait) are watches, so
// a join is seen as soon as etcd has it, with no polling.
//
// Only the agents talk to etcd. The ranks keep the built-in TCP store (package
// store), hosted by node 0's agent, whose address the agents publish here.
//
// It talks to etcd through a small hand-written client (gateway, net/http and
// encoding/json) rather than etcd's Go client, whose gRPC and protobuf cost
// every pplaunch process 1.1-1.3 ms of package initialisation before main
// (GODEBUG=inittrace=1, 2 December 2026: protobuf 0.55 ms, etcd's API
// packages 0.25, gRPC 0.18, genproto 0.14), most of the launcher's start,
// though only agents of an etcd rendezvous ever use it.
//
// It imports store (the interface it implements) and gateway; only launch
// imports it.
package etcdstore
