package models

// Release frees the memory the stage holds on its backend: its parameters
// and gradient, the per-micro-batch gradient buffers and the activation
// buffers its arena keeps for reuse. The stage must not be used afterwards:
// a rank that rebuilds its stages for a new cut (live rebalancing) releases
// the old ones, whose device memory would otherwise stay taken.
func (s *Stage) Release() {
	for _, b := range s.pool {
		s.be.Free(b)
	}
	s.pool = nil
	for n, l := range s.arena.free {
		if s.arena.be != nil {
			for _, t := range l {
				s.arena.be.Free(t)
			}
		}
		delete(s.arena.free, n)
	}
	s.be.Free(s.value)
	s.be.Free(s.grad)
	s.params, s.byName, s.subs = nil, nil, nil
}
