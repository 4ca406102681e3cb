//go:build !amd64

package collective

// addVec has no vector kernels on this architecture: the scalar loop adds
// everything.
func addVec[T float](dst, src []T) int { return 0 }
