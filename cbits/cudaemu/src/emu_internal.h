/* Shared by the emulated runtime's source files (not by kernels). */
#ifndef CUDAEMU_INTERNAL_H
#define CUDAEMU_INTERNAL_H

#include <stddef.h>
#include <functional>
#include <string>

#define EMU_API extern "C" __attribute__((visibility("default")))

/* cudaError_t values the emulator returns (same numbers as CUDA 13). */
enum {
	cudaSuccess = 0,
	cudaErrorInvalidValue = 1,
	cudaErrorMemoryAllocation = 2,
	cudaErrorInitializationError = 3,
	cudaErrorInvalidConfiguration = 9,
	cudaErrorInvalidMemcpyDirection = 21,
	cudaErrorInsufficientDriver = 35,
	cudaErrorInvalidDeviceFunction = 98,
	cudaErrorNoDevice = 100,
	cudaErrorInvalidDevice = 101,
	cudaErrorInvalidKernelImage = 200,
	cudaErrorInvalidResourceHandle = 400,
	cudaErrorSymbolNotFound = 500,
	cudaErrorNotReady = 600,
	cudaErrorIllegalAddress = 700,
	cudaErrorLaunchFailure = 719,
};

/* emu_fail records err with a detail the next cudaGetErrorString(err) on this
 * thread appends, sets it as the last error, and returns it. */
int emu_fail(int err, const std::string &detail);
/* emu_sticky is the context's sticky error (a failed kernel), or 0. */
int emu_sticky(void);
void emu_set_sticky(int err, const std::string &detail);
/* emu_device_error is 35 or 100 when the environment asks the emulator to
 * behave as a machine without a driver or without a device, else 0. */
int emu_device_error(void);
/* emu_check_range says whether [p, p+n) lies inside one device allocation;
 * otherwise why not, in why. */
bool emu_check_range(const void *p, size_t n, std::string *why);
bool emu_valid_stream(void *s);
/* emu_enqueue queues f on stream s (runs it at once under CUDAEMU_SYNC=1);
 * emu_drain_all runs everything queued. */
void emu_enqueue(void *s, std::function<void()> f);
void emu_drain_all(void);
std::string emu_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
