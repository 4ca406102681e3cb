// Package netns gives tests simulated hosts on one Linux machine: each host is a
// network namespace plus a UTS namespace, with its own address (10.77.S.K/24), its
// own host name, a veth pair into a private bridge (10.77.S.254 on the machine's
// side), and an /etc/hosts line so every namespace resolves every host name.
//
// Processes run "on" a host through nsenter (Host.Command); they share the
// machine's file system, so binaries and temporary directories are visible
// everywhere. The namespaces get no default route and forwarding is left as it
// is, so traffic stays on the test subnet.
//
// Several test binaries may build networks at once (go test runs packages in
// parallel): each network takes a free slot S (a flock under /run/pplaunch-netns),
// which names its subnet, bridge, veths and namespaces, and each host name is
// held by a flock of its own, so two networks never claim the same name. A slot
// or name whose lock is free but whose resources remain (a test binary that was
// killed) is cleaned before reuse.
//
// Creating namespaces needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and the
// programs ip (iproute2), nsenter and unshare (util-linux); New skips the test,
// saying which is missing, where they are not available.
//
// A test harness: it imports no other package of pplaunch, and only tests
// (and launch/slurmtest) must ever import it.
package netns
