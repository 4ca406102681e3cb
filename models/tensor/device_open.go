package tensor

import "fmt"

// The device names --device takes: where a rank computes.
const (
	DeviceCPU  = "cpu"
	DeviceCUDA = "cuda"
)

// CheckDevice refuses a device name Open does not know.
func CheckDevice(device string) error {
	if device != DeviceCPU && device != DeviceCUDA {
		return fmt.Errorf("--device %q: want cpu or cuda", device)
	}
	return nil
}

// GPUs is how many GPUs --device cuda finds: the visible ones, counted
// through the loaded CUDA runtime, or one error naming --device cuda and what
// is missing (a library, the driver, a GPU).
func GPUs() (int, error) {
	n, err := CUDADevices()
	if err != nil {
		return 0, fmt.Errorf("--device cuda: cuda backend: %w", err)
	}
	return n, nil
}

// GPUOf is the GPU a rank computes on, torchrun's convention: its local rank
// among the visible GPUs (CUDA_VISIBLE_DEVICES, which the runtime applies),
// wrapping around when a node runs more ranks than it has GPUs, so that
// several ranks share one.
func GPUOf(localRank, gpus int) int { return localRank % gpus }

// OpenOptions are the choices of an opened backend beyond its device.
type OpenOptions struct {
	// TF32 lets the CUDA backend's float32 products use TF32 tensor cores
	// (--precision tf32); the CPU has none.
	TF32 bool
}

// Opened is a rank's compute backend as Open gives it.
type Opened struct {
	Backend Backend
	// What says for the run's start line what computes, and on GPUs how the
	// node's ranks map onto them.
	What string
	// Hint is a note for the run's log about the backend (the CPU's: where
	// OpenBLAS did not load), or "".
	Hint string
	// Close releases the backend (the GPU's memory, its device thread).
	Close func()
}

// Open opens the compute backend of a rank with local rank localRank of
// localRanks on its node: the CPU backend ($PPLAUNCH_BLAS chooses its matrix
// products), or the CUDA backend on GPU GPUOf(localRank, GPUs()).
func Open(device string, localRank, localRanks int, opts OpenOptions) (Opened, error) {
	return openWith(device, localRank, localRanks, opts, GPUs, NewCUDA)
}

// openWith is Open with the GPU count and the CUDA backend's opening given
// (tests stand in for a machine with GPUs).
func openWith(device string, localRank, localRanks int, opts OpenOptions,
	gpus func() (int, error), newCUDA func(int, CUDAOptions) (*CUDA, error)) (Opened, error) {
	if err := CheckDevice(device); err != nil {
		return Opened{}, err
	}
	if device == DeviceCPU {
		cpu, err := NewCPUFromEnv()
		if err != nil {
			return Opened{}, err
		}
		return Opened{Backend: cpu, What: cpu.Name(), Hint: cpu.OpenBLASHint(), Close: func() {}}, nil
	}
	n, err := gpus()
	if err != nil {
		return Opened{}, err
	}
	gpu := GPUOf(localRank, n)
	cu, err := newCUDA(gpu, CUDAOptions{TF32: opts.TF32})
	if err != nil {
		return Opened{}, fmt.Errorf("--device cuda (local rank %d on GPU %d of %d): %w", localRank, gpu, n, err)
	}
	return Opened{Backend: cu, What: CUDAPlacement(cu.Name(), localRanks, n), Close: func() { _ = cu.Close() }}, nil
}

// CUDAPlacement says how a node's localRanks ranks map onto its gpus GPUs,
// after the backend's name.
func CUDAPlacement(name string, localRanks, gpus int) string {
	plural, them := "s", "them"
	if gpus == 1 {
		plural, them = "", "it"
	}
	share := ""
	if localRanks > gpus {
		share = fmt.Sprintf(", %d local ranks sharing %s", localRanks, them)
	}
	return fmt.Sprintf("%s (GPU = LOCAL_RANK mod %d visible GPU%s%s)", name, gpus, plural, share)
}
