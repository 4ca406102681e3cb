/* The orders a launch runs its blocks and a block its threads in: seeded
 * (CUDAEMU_SEED, default 1), so a run is reproducible and another seed tries
 * other interleavings. */
#ifndef CUDAEMU_ORDER_H
#define CUDAEMU_ORDER_H

#include <stdint.h>
#include <vector>

struct Rng;
/* shuffle fills order with a random permutation of [0, n). */
void shuffle(std::vector<unsigned> *order, unsigned n, Rng *r);
/* warp_order fills order with n threads warp by warp, the warps in a random
 * order and each warp's lanes up or down at random: the scheduler walks
 * threads near each other in memory, and a GPU schedules warps. */
void warp_order(std::vector<unsigned> *order, unsigned n, Rng *r);

uint64_t emu_seed(void);

/* Rng is splitmix64. */
struct Rng {
	uint64_t s;
	uint64_t next(void);
	uint64_t below(uint64_t n); /* uniform in [0, n), n > 0 */
};

/* BlockOrder is a random permutation of [0, n) up to 2^16 blocks; above, to
 * stay small, i -> (a*i + b) mod n with a coprime to n. */
struct BlockOrder {
	uint64_t n, a, b;
	std::vector<unsigned> perm;
	BlockOrder(uint64_t n, Rng *r);
	uint64_t at(uint64_t i) const;
};


#endif
