package sgemm

// Blocks are the cache blocks of the product: a kc×nr sliver of B stays in L1
// while the MR-tall slivers of an mc×kc block of A stream from L2 past it, and
// a kc×nc panel of B is reused from L3 by every block of A.
type Blocks struct {
	MC, KC, NC int
}

// Caches are data cache sizes in bytes (per core for L1 and L2).
type Caches struct {
	L1, L2, L3 int
}

// defaultCaches is what blocks are sized for when the sizes cannot be read:
// a common server core (48 KiB L1d, 1 MiB L2, 16 MiB L3).
var defaultCaches = Caches{L1: 48 << 10, L2: 1 << 20, L3: 16 << 20}

// ChooseBlocks sizes the blocks for a kernel of mr×nr from the cache sizes:
// the B sliver fills L1 (A and C pass through it), the A block half of L2 and the B
// panel a quarter of L3 (others share it). Each is rounded down to a multiple
// of its tile (kc to 8), within limits that keep packing buffers small. The
// blocks change the speed only: the summation order does not depend on them.
func ChooseBlocks(c Caches, mr, nr int) Blocks {
	if c.L1 <= 0 || c.L2 <= 0 || c.L3 <= 0 {
		c = defaultCaches
	}
	kc := clamp(c.L1/(4*nr), 64, 512) &^ 7
	mc := clamp(c.L2/2/(4*kc), mr, 2048) / mr * mr
	nc := clamp(c.L3/4/(4*kc), nr, 8192) / nr * nr
	return Blocks{MC: max(mc, mr), KC: kc, NC: max(nc, nr)}
}

func clamp(v, lo, hi int) int { return max(lo, min(hi, v)) }
