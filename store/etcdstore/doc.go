// Package etcdstore is the agents' rendezvous over an etcd cluster (etcd's v3
// API, through the official client go.etcd.io/etcd/client/v3): a store.Store
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
// It imports store (the interface it implements) and etcd's client; only
// launch imports it.
package etcdstore
