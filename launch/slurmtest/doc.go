// Package slurmtest runs a real Slurm cluster for tests: munged, slurmctld on the
// machine, and one slurmd per simulated host, each in its own network and UTS
// namespace (package netns), so tasks on different nodes have different
// addresses and host names, as on a real cluster.
//
// Start installs Debian's Slurm with apt-get when it is missing, writes a
// slurm.conf in a temporary directory, starts the daemons in the foreground
// under the test's control, waits until every node is idle, and tears everything
// down in t.Cleanup. Sbatch and Wait submit a job and poll it to its end (polling
// scontrol every 100 ms: sbatch --wait backs off for seconds). Nothing is sent
// anywhere but loopback and the namespaces' own addresses.
//
// The package's own tests submit the sbatch scripts in examples/slurm, both ways
// (one pplaunch agent per node, and one rank per srun task with --direct), and
// run two agents on two hosts without Slurm; ranks run ReportScript, and
// CheckWorld checks that they form the right world across the nodes. Tests of
// other packages use the same pieces (Start, CleanEnv, ReportScript, ParseReport,
// CheckWorld) for their multi-node jobs.
//
// A test harness: it imports only launch/netns, and only tests must ever
// import it.
package slurmtest
