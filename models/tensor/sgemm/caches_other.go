//go:build !linux

package sgemm

// readCaches knows no cache sizes off Linux: ChooseBlocks uses its defaults.
func readCaches() Caches { return Caches{} }
