package keeper

import "errors"

// The few text helpers the keeper needs, in place of strconv and strings:
// those initialise late in a large binary (Go initialises packages in
// import-path order among those whose imports are done), and the keeper's
// mode runs from this package's init, which is early only while every
// package it imports is among the first initialised (os, os/signal, syscall,
// time, errors). The launch measures the difference (docs/benchmarks.md).

// itoa is strconv.Itoa.
func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [24]byte
	i := len(b)
	neg := n < 0
	u := uint64(n)
	if neg {
		u = uint64(-n)
	}
	for u > 0 {
		i--
		b[i] = byte('0' + u%10)
		u /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

var errNumber = errors.New("not a decimal integer")

// atoi is strconv.Atoi for the decimal integers the keeper writes.
func atoi(s string) (int, error) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 19 {
		return 0, errNumber
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errNumber
		}
		n = n*10 + int(s[i]-'0')
	}
	if neg {
		n = -n
	}
	return n, nil
}

// split is strings.Split for a one-byte separator.
func split(s string, sep byte) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// fields is strings.Fields for spaces, tabs and newlines.
func fields(s string) []string {
	var out []string
	start := -1
	for i := 0; i <= len(s); i++ {
		space := i == len(s) || s[i] == ' ' || s[i] == '\t' || s[i] == '\n'
		if space && start >= 0 {
			out = append(out, s[start:i])
			start = -1
		} else if !space && start < 0 {
			start = i
		}
	}
	return out
}

// cut is strings.Cut.
func cut(s, sep string) (before, after string, found bool) {
	for i := 0; i+len(sep) <= len(s); i++ {
		if s[i:i+len(sep)] == sep {
			return s[:i], s[i+len(sep):], true
		}
	}
	return s, "", false
}

// cutPrefix is strings.CutPrefix.
func cutPrefix(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):], true
	}
	return s, false
}

// join is strings.Join.
func join(elems []string, sep string) string {
	n := 0
	for _, e := range elems {
		n += len(e) + len(sep)
	}
	b := make([]byte, 0, n)
	for i, e := range elems {
		if i > 0 {
			b = append(b, sep...)
		}
		b = append(b, e...)
	}
	return string(b)
}

// oneLine replaces the newlines of s with spaces.
func oneLine(s string) string {
	b := []byte(s)
	for i := range b {
		if b[i] == '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}
