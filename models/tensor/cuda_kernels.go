package tensor

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// kernelOptions are the NVRTC options every kernel is built with: no fused
// multiply-add, so elementwise kernels round as the CPU backend does.
var kernelOptions = []string{"--fmad=false"}

// kernels compiles KernelSource for the device's architecture at first use
// (or reads the CUBIN from the disk cache), loads it, and looks kernels up by
// name once.
type kernels struct {
	dev      *device
	arch     string // e.g. "sm_90"
	cacheDir string // "" for no disk cache

	once   sync.Once
	err    error
	lib    cuLibrary
	mu     sync.Mutex
	byName map[string]cuKernel
}

// KernelCacheDir is where compiled kernels are kept by default:
// os.UserCacheDir()/pplaunch/kernels ("" when there is no user cache directory).
func KernelCacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "pplaunch", "kernels")
}

// kernelKey names a compiled image: the hash of the source, the options, the
// architecture and the NVRTC version.
func kernelKey(src, arch string, v cudaVersions) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00nvrtc %d.%d\x00", arch, strings.Join(kernelOptions, " "), v.NVRTCMajor, v.NVRTCMinor)
	h.Write([]byte(src))
	return hex.EncodeToString(h.Sum(nil)[:16]) + "-" + arch + ".cubin"
}

// load compiles or reads the image and loads it on the device.
func (k *kernels) load() error {
	k.once.Do(func() {
		src := KernelSource()
		api := k.dev.api
		key := kernelKey(src, k.arch, api.Versions())
		if k.cacheDir != "" {
			path := filepath.Join(k.cacheDir, key)
			if image, err := os.ReadFile(path); err == nil {
				// A truncated or overwritten file must never reach the
				// runtime: with lazy loading it may accept the image and
				// fail only at the first launch.
				if checkImage(image) == nil && k.loadImage(image) == nil {
					return
				}
				_ = os.Remove(path) // damaged, or unreadable by this driver: build it again
			}
		}
		image, log, err := api.Compile(src, "pplaunch_kernels.cu", k.arch, kernelOptions...)
		if err != nil {
			k.err = fmt.Errorf("compiling kernels for %s: %w\n%s", k.arch, err, log)
			return
		}
		if k.err = k.loadImage(image); k.err != nil {
			k.err = fmt.Errorf("loading kernels for %s: %w", k.arch, k.err)
			return
		}
		k.store(key, image)
	})
	return k.err
}

func (k *kernels) loadImage(image []byte) error {
	return k.dev.call(func() (err error) { k.lib, err = k.dev.api.LibraryLoadData(image); return err })
}

// store writes image to the cache atomically; a cache that cannot be written
// only costs a compile next time.
func (k *kernels) store(key string, image []byte) {
	if k.cacheDir == "" || os.MkdirAll(k.cacheDir, 0o755) != nil {
		return
	}
	f, err := os.CreateTemp(k.cacheDir, key+".tmp*")
	if err != nil {
		return
	}
	_, werr := f.Write(image)
	cerr := f.Close()
	if werr != nil || cerr != nil || os.Rename(f.Name(), filepath.Join(k.cacheDir, key)) != nil {
		_ = os.Remove(f.Name())
	}
}

// get returns the kernel of that name, loading the image first if needed.
func (k *kernels) get(name string) (cuKernel, error) {
	if err := k.load(); err != nil {
		return 0, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if kn, ok := k.byName[name]; ok {
		return kn, nil
	}
	var kn cuKernel
	err := k.dev.call(func() (err error) { kn, err = k.dev.api.LibraryGetKernel(k.lib, name); return err })
	if err != nil {
		return 0, fmt.Errorf("kernel %s: %w", name, err)
	}
	if k.byName == nil {
		k.byName = map[string]cuKernel{}
	}
	k.byName[name] = kn
	return kn, nil
}

func (k *kernels) unload() {
	if k.lib != 0 {
		_ = k.dev.call(func() error { return k.dev.api.LibraryUnload(k.lib) })
	}
}

// checkImage says whether image is a whole 64-bit ELF file (what NVRTC
// writes for a real architecture): the magic, a header the standard
// library parses, and every section's bytes inside the file.
func checkImage(image []byte) error {
	if len(image) < 64 || !bytes.HasPrefix(image, []byte(elf.ELFMAG)) {
		return errors.New("not an ELF image")
	}
	f, err := elf.NewFile(bytes.NewReader(image))
	if err != nil {
		return fmt.Errorf("damaged ELF image: %w", err)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 {
		return fmt.Errorf("ELF class %v, want %v", f.Class, elf.ELFCLASS64)
	}
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOBITS && s.Offset+s.FileSize > uint64(len(image)) {
			return fmt.Errorf("section %q ends at byte %d of a %d-byte image", s.Name, s.Offset+s.FileSize, len(image))
		}
	}
	return nil
}
