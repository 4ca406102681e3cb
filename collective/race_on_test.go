//go:build race

package collective

// raceEnabled reports a -race build, whose sync.Pool drops a share of what is
// put back on purpose, so allocation counts do not hold there.
const raceEnabled = true
