//go:build amd64

// Command peak measures this CPU's single-core FMA throughput, the peak a
// matrix product is measured against: register-only loops of independent
// VFMADD231PS on ZMM (AVX-512) and YMM (AVX2), GFLOP/s per second of the
// thread's CPU time (other jobs on the machine do not count). Two FMA units
// show as AVX-512 at twice AVX2's rate; the clock is rate / (units × lanes × 2).
//
//	go run ./models/tensor/sgemm/internal/peak
package main

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/cpu"
	"golang.org/x/sys/unix"
)

func fmaLoop(n int)
func fmaLoop2(n int)

func threadCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func main() {
	if !cpu.X86.HasAVX512F || !cpu.X86.HasAVX2 || !cpu.X86.HasFMA {
		fmt.Fprintln(os.Stderr, "peak: needs AVX-512F, AVX2 and FMA")
		os.Exit(2)
	}
	runtime.LockOSThread()
	const n = 200_000_000
	for range 3 {
		t0 := threadCPU()
		fmaLoop(n)
		z := float64(n) * 24 * 16 * 2 / (threadCPU() - t0).Seconds() / 1e9
		t0 = threadCPU()
		fmaLoop2(n)
		y := float64(n) * 12 * 8 * 2 / (threadCPU() - t0).Seconds() / 1e9
		fmt.Printf("AVX-512 %.1f GFLOP/s, AVX2 %.1f GFLOP/s: %.2f GHz at 2 units of 16 lanes\n", z, y, z/64)
	}
}
