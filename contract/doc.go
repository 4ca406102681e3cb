// Package contract is everything the agent (package launch) and its ranks
// (package ranks) must agree on, in one place that both import: the
// environment names of the launch (torchrun's and pplaunch's own), an
// elastic job's facts in them (Elastic: written by the agent, read by the
// ranks), the progress file's layout and its failure classes, and how
// signals are named in messages. Each side is tested against it, so a
// change here is a change of both.
//
// It imports only the standard library and golang.org/x/sys/unix, and must
// never import another package of pplaunch.
package contract
