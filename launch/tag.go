package launch

import "fmt"

// outputPrefixes are the tags the agent puts on a rank's stdout and stderr
// lines on the console: "[rank N] " with Config.Tag.
//
// A job whose output is for a program (bench p2p --json: one JSON object a
// line, printed by rank 0 alone) sets Config.Rank0Raw, and rank 0's stdout
// is then relayed as it is, so that the agent's stdout parses as printed.
// Only that one stream loses its tag: rank 0's stderr, and anything another
// rank prints, still say whose they are, and the agent's own lines go to
// stderr. The rank needs no channel of its own for this (its stdout already
// is the job's result), and a rank run under --direct prints untagged anyway.
func outputPrefixes(c Config, global int) (stdout, stderr string) {
	if !c.Tag {
		return "", ""
	}
	tag := fmt.Sprintf("[rank %d] ", global)
	if c.Rank0Raw && global == 0 {
		return "", tag
	}
	return tag, tag
}
