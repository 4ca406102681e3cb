// Package store is the rendezvous key-value store shared by a job's agents and
// ranks: agents use it to form the world, ranks to find their peers, align their
// clocks and meet at barriers.
//
// The Store interface has two implementations: the TCP server and client that
// real jobs use (the agent of node 0 hosts it at the rendezvous endpoint), and
// Memory, an in-process store for unit tests of the packages above it.
//
// Every blocking call takes a context; callers give it a deadline, so no wait is
// unbounded.
//
// The handshake (AcceptHandshake, DialHandshake) and the bounds on connections
// that have not proved the token yet (Pending) live here too, and the rank links (package collective)
// use them: every pplaunch listener admits connections the same way.
//
// It imports only contract (the token's environment name): the agent
// (launch), the ranks and collective all import it, so it must never import
// any other package of pplaunch.
package store
