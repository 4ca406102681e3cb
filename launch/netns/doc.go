// Package netns gives simulated hosts on one Linux machine: each host is a
// network namespace plus a UTS namespace, with its own address (10.77.S.K/24), its
// own host name, a veth pair into a private bridge (10.77.S.254 on the machine's
// side), and an /etc/hosts line so every namespace resolves every host name.
//
// Processes run "on" a host through nsenter (Host.Command); they share the
// machine's file system, so binaries and temporary directories are visible
// everywhere. The namespaces get no default route and forwarding is left as it
// is, so traffic stays on the private subnet.
//
// Several processes may build networks at once (go test runs packages in
// parallel): each network takes a free slot S (a flock under /run/pplaunch-netns),
// which names its subnet, bridge, veths and namespaces, and each host name is
// held by a flock of its own, so two networks never claim the same name. A slot
// or name whose lock is free but whose resources remain (a process that was
// killed) is cleaned before reuse.
//
// Creating namespaces needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and the
// programs ip (iproute2), nsenter and unshare (util-linux); Available says which
// is missing, and New skips the test, saying why, where they are not available.
//
// It serves two users, and no other library package of pplaunch may import it:
// tests (through New, and launch/slurmtest), and the command
// `pplaunch bench scaling` in cmd/pplaunch, which builds its hosts with Create.
// It imports no other package of pplaunch, nor package testing, so the binary
// does not link the test framework.
package netns
