//go:build cgo

package cbits

import (
	"strings"
	"testing"
)

// TestLoaderErrors: a missing library and a missing symbol are errors that name
// what was looked for, and a library without OpenBLAS's own symbols is refused
// as not OpenBLAS, without a crash.
func TestLoaderErrors(t *testing.T) {
	if _, err := open("libpplaunch-missing.so.0"); err == nil || !strings.Contains(err.Error(), "dlopen libpplaunch-missing.so.0") {
		t.Fatalf("missing library: %v", err)
	}
	if _, err := loadOpenBLAS("libpplaunch-missing.so.0"); err == nil ||
		!strings.Contains(err.Error(), "load OpenBLAS: dlopen libpplaunch-missing.so.0") {
		t.Fatalf("missing OpenBLAS: %v", err)
	}
	libc, err := open("libc.so.6")
	if err != nil {
		t.Skipf("no libc.so.6 to test symbol lookup against: %v", err)
	}
	if _, err := libc.sym("malloc"); err != nil {
		t.Fatalf("malloc in libc: %v", err)
	}
	if _, err := libc.sym("openblas_get_config"); err == nil || err.Error() != "libc.so.6: symbol openblas_get_config not found" {
		t.Fatalf("missing symbol: %v", err)
	}
	if _, err := loadOpenBLAS("libc.so.6"); err == nil || !strings.Contains(err.Error(), "openblas_get_config not found (not OpenBLAS") {
		t.Fatalf("a library that is not OpenBLAS: %v", err)
	}
}
