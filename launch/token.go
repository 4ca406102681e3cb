package launch

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/pplaunch/pplaunch/contract"
)

// The job token is the secret every store connection and rank link proves it
// holds (HMAC over nonces, so it never crosses the wire).
//
// On one node the agent generates it: its ranks get it in their environment
// and nobody else needs it. A job on several nodes needs the same secret on
// every node, and nothing the nodes know alike is secret (the run id and the
// endpoint are printed, Slurm's job id and node list are visible to every
// user), so PPLAUNCH_TOKEN must give it, as a shared secret for other
// launchers' rendezvous must; pplaunch refuses to start without it, before it
// listens on anything.

// jobToken is the token of a job of nnodes nodes, given the PPLAUNCH_TOKEN
// value (empty when unset). what names the setting that made the job span
// nodes, for the error ("--nnodes 2").
func jobToken(given string, nnodes int, what string) (string, error) {
	switch {
	case given != "":
		return given, nil
	case nnodes > 1:
		return "", errNoToken(what)
	default:
		return randomHex(16), nil
	}
}

// TokenHelp says how a job on several nodes gets its token (for --help).
const TokenHelp = `A job on several nodes needs a secret token, the same on every node: export
PPLAUNCH_TOKEN=$(openssl rand -hex 16) before pplaunch starts (in an sbatch script,
before srun, which passes it to every node); without it pplaunch refuses to start.
On one node pplaunch generates its own.`

func errNoToken(what string) error {
	return fmt.Errorf("%s: a job on several nodes needs a secret token shared by its nodes, and %s is not set; "+
		"generate one and export the same value on every node before pplaunch starts: export %s=$(openssl rand -hex 16) "+
		"(in an sbatch script, export it before srun, which passes it to every node; nothing Slurm gives the job is secret)",
		what, contract.EnvToken, contract.EnvToken)
}

// DeriveToken is the token the ranks of a single-node --direct job compute
// alike from the run id when PPLAUNCH_TOKEN is not set: srun or mpirun start
// them with nothing secret in common. It keeps jobs from joining each other's
// store by mistake; it is not a secret.
func DeriveToken(runID string) string {
	sum := sha256.Sum256([]byte("pplaunch store token\x00" + runID))
	return hex.EncodeToString(sum[:16])
}
