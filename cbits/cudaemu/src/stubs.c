/* Stand-ins with the real sonames for the libraries the emulator needs only
 * to exist: libcublasLt.so.13 (cuBLAS's dependency; built with -DCUBLASLT)
 * and libnvrtc-builtins.so.13.0 (which the loader preloads). g++ builds
 * this file as C++, hence the C linkage. */
#ifdef __cplusplus
extern "C" {
#endif
#ifdef CUBLASLT
__attribute__((visibility("default"))) unsigned long cublasLtGetVersion(void) { return 130000; }
#else
__attribute__((visibility("default"))) int cudaemu_nvrtc_builtins(void) { return 13; }
#endif
#ifdef __cplusplus
}
#endif
