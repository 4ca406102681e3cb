package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/contract"
	"github.com/pplaunch/pplaunch/launch"
	"github.com/pplaunch/pplaunch/models"
	"github.com/pplaunch/pplaunch/models/tensor"
	"github.com/pplaunch/pplaunch/ranks"
)

// Devices `train` computes on.
const (
	deviceCPU  = "cpu"
	deviceCUDA = "cuda"
)

func checkDevice(d string) error {
	if d != deviceCPU && d != deviceCUDA {
		return fmt.Errorf("--device %q: want cpu or cuda", d)
	}
	return nil
}

// cudaDevices counts the visible GPUs through the loaded CUDA runtime (a
// variable so that tests can stand in for a machine with GPUs).
var cudaDevices = tensor.CUDADevices

// gpuOf is the GPU a rank computes on, torchrun's convention: its local
// rank among the visible GPUs (CUDA_VISIBLE_DEVICES, which the runtime
// applies), wrapping around when a node runs more ranks than it has GPUs,
// so that several ranks share one.
func gpuOf(localRank, gpus int) int { return localRank % gpus }

// prepareDevice is the agent's check that the device can be used, before any
// rank starts: with --device cuda, the NVIDIA libraries load and see a GPU
// (else one message naming what was looked for and where), and --nproc auto
// becomes the number of GPUs. Inside a rank, or under --direct, it checks
// nothing: the rank opens its device itself.
func (c *trainCmd) prepareDevice(f launch.Flags, getenv func(string) string) (launch.Flags, error) {
	if err := checkDevice(c.Device); err != nil {
		return f, err
	}
	if c.Device != deviceCUDA || f.Direct || getenv(contract.EnvRole) == contract.RoleRank {
		return f, nil
	}
	n, err := cudaDevices()
	if err != nil {
		return f, fmt.Errorf("--device cuda: cuda backend: %w", err)
	}
	if f.NProc == "auto" {
		f.NProc = strconv.Itoa(n)
	}
	return f, nil
}

// openBackend opens the rank's compute backend and says what it is for the
// start line; close releases it.
func (c *trainCmd) openBackend(localRank, localRanks int) (be tensor.Backend, what string, close func(), err error) {
	if c.Device != deviceCUDA {
		cpu, err := tensor.NewCPUFromEnv()
		if err != nil {
			return nil, "", nil, err
		}
		return cpu, cpu.Name(), func() {}, nil
	}
	n, err := cudaDevices()
	if err != nil {
		return nil, "", nil, fmt.Errorf("--device cuda: cuda backend: %w", err)
	}
	gpu := gpuOf(localRank, n)
	prec, err := resolvePrecision(c.Precision, c.TF32, c.Device)
	if err != nil {
		return nil, "", nil, err
	}
	cu, err := tensor.NewCUDA(gpu, tensor.CUDAOptions{TF32: prec == models.TF32})
	if err != nil {
		return nil, "", nil, fmt.Errorf("--device cuda (local rank %d on GPU %d of %d): %w", localRank, gpu, n, err)
	}
	return cu, cudaPlacement(cu.Name(), localRanks, n), func() { _ = cu.Close() }, nil
}

// cudaPlacement says how the node's ranks map onto its GPUs.
func cudaPlacement(name string, localRanks, gpus int) string {
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

// openDeviceComm joins the NCCL communicator of the job on the GPU of the
// rank's CUDA backend be, whose device thread makes every NCCL call; the
// unique id travels through the job's store, under a key of this restart.
// timeout bounds the joining as well as every later wait.
func openDeviceComm(ctx context.Context, r *ranks.Rank, be tensor.Backend, timeout time.Duration) (collective.Comm, error) {
	dev := be.Device()
	if dev == nil {
		return nil, errors.New("train: --backend nccl moves GPU tensors: use --device cuda")
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return collective.NewNCCL(dctx, r.Store, r.Rank, r.WorldSize, collective.NCCLOptions{
		Options: collective.Options{Timeout: timeout}, Device: dev, StorePrefix: fmt.Sprintf("nccl/restart%d", r.RestartCount),
	})
}

// transfersOver is the start line's note of where the transfers go.
func transfersOver(backend string) string {
	if backend == "nccl" {
		return "; device tensors over nccl, host messages over tcp"
	}
	return "; transfers over tcp"
}
