// Package keeper makes sure nothing of a node's ranks outlives them or their
// agent. Where the agent can make a cgroup for the job it keeps its ranks
// itself (Local, local.go): no process is exec'd but the ranks, and a
// guardian forked without exec kills the cgroup if the agent dies. Elsewhere
// the agent starts one keeper process per node and attempt, described below:
// its own executable, re-executed with Env set, which this package's
// init turns into the keeper before any heavier package of the binary
// initialises (so a binary that links it, through package launch, has the
// mode). The keeper
//   - is a child subreaper (PR_SET_CHILD_SUBREAPER): what a rank leaves
//     behind (a background process, a daemon that double-forked) becomes the
//     keeper's child instead of init's;
//   - starts each rank the agent asks for in its own process group, with
//     PR_SET_PDEATHSIG, so the ranks die with the keeper, and, where a cgroup
//     v2 hierarchy is writable, in a cgroup of its own (cgroup.go), which
//     cgroup.kill empties at once however the rank's processes hid;
//   - when a rank exits, kills what it left behind (its cgroup, or its
//     process group and the orphans whose environment names its local rank),
//     then tells the agent how the rank ended;
//   - holds one end of a socket pair whose other end only the agent holds:
//     it reads EOF when the agent is done or gone, however it died (SIGKILL
//     included), and then kills everything left and exits.
//
// The messages on that socket (proto.go) are pure data with their own tests;
// the agent's own keeper reports the same events on a channel. The package
// imports only the standard library (and cgo for the guardian's fork): it
// runs in a process that starts often and must start fast.
package keeper
