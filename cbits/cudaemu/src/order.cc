// Seeded orders of blocks and threads (order.h).
#include "order.h"

#include <numeric>
#include <stdlib.h>

uint64_t emu_seed(void) {
	static uint64_t s = [] {
		const char *v = getenv("CUDAEMU_SEED");
		return v && *v ? strtoull(v, nullptr, 10) : 1ull;
	}();
	return s;
}

uint64_t Rng::next(void) {
	uint64_t z = (s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t Rng::below(uint64_t n) {
	if (n <= 0xffffffffu) return (next() >> 32) * n >> 32; // no division: a block's threads take one each
	return next() % n;
}

BlockOrder::BlockOrder(uint64_t n_, Rng *r) : n(n_), a(1), b(0) {
	if (n < 2) return;
	if (n <= 1u << 16) {
		shuffle(&perm, (unsigned)n, r);
		return;
	}
	b = r->below(n);
	for (int tries = 0; tries < 64; tries++) {
		uint64_t c = 1 + r->below(n - 1);
		if (std::gcd(c, n) == 1) {
			a = c;
			return;
		}
	}
	a = n - 1; // coprime to n: the reverse order, shifted
}

uint64_t BlockOrder::at(uint64_t i) const {
	if (!perm.empty()) return perm[i];
	return (uint64_t)(((unsigned __int128)a * i + b) % n);
}

void shuffle(std::vector<unsigned> *order, unsigned n, Rng *r) {
	order->resize(n);
	std::iota(order->begin(), order->end(), 0u);
	for (unsigned i = n; i > 1; i--) std::swap((*order)[i - 1], (*order)[r->below(i)]);
}

void warp_order(std::vector<unsigned> *order, unsigned n, Rng *r) {
	std::vector<unsigned> warps;
	shuffle(&warps, (n + 31) / 32, r);
	order->clear();
	for (unsigned w : warps) {
		unsigned lo = w * 32, hi = lo + 32 < n ? lo + 32 : n;
		bool down = r->next() & 1;
		for (unsigned i = lo; i < hi; i++) order->push_back(down ? hi - 1 - (i - lo) : i);
	}
}
