package bench

import (
	"cmp"
	"slices"
)

// median returns the middle value of v (the upper one of an even count); v is
// left unsorted.
func median[T cmp.Ordered](v []T) T {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
