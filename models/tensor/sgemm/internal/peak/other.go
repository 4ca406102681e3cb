//go:build !amd64

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "peak: amd64 only")
	os.Exit(2)
}
