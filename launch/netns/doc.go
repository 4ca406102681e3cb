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
// The hosts' links can be shaped with tc (iproute2): Net.LimitRate caps each
// host's traffic, each way, with a tbf qdisc on both ends of its veth pair, and
// Net.AddDelay delays what each host sends with netem, where the kernel has it
// (DelayAvailable says whether it does). The qdiscs go with the veths and
// namespaces when the network is closed.
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
// Shaping links needs tc as well, which only LimitRate, AddDelay and
// DelayAvailable look for.
//
// It serves two users, and no other library package of pplaunch may import it:
// tests (through New, and launch/slurmtest), and the command
// `pplaunch bench scaling` in cmd/pplaunch, which builds its hosts with Create.
// It imports no other package of pplaunch, nor package testing, so the binary
// does not link the test framework.
package netns
