package collective

import (
	"fmt"
	"strings"
)

// The communicator backends of the device tensors --backend chooses among
// (host messages always go over TCP).
const (
	BackendTCP  = "tcp"
	BackendNCCL = "nccl"
	BackendAuto = "auto"
)

// BackendFacts are what the choice of backend depends on (ProbeBackend
// gathers them from the machine).
type BackendFacts struct {
	Device    string // where tensors live: "cpu" or "cuda"
	Stage     bool   // the program hands device tensors to the communicator
	Ranks     int    // ranks on this node (0: unknown)
	GPUs      int    // visible GPUs
	GPUErr    error  // why there are none, if there are none
	NCCL      int    // ncclGetVersion's code, 0 when NCCLErr
	NCCLErr   error  // why NCCL did not load
	MultiRank bool   // NCCL_MULTI_RANK_GPU_ENABLE=1
}

// ChooseBackend decides the communicator for --backend flag: tcp always
// works; nccl needs GPU tensors, a GPU for every rank (or NCCL 2.30's
// several ranks per GPU, when enabled) and NCCL; auto takes nccl when it
// can and says why not otherwise. note is what the agent prints.
func ChooseBackend(flag string, f BackendFacts) (choice, note string, err error) {
	switch flag {
	case BackendTCP:
		return BackendTCP, "", nil
	case BackendNCCL, BackendAuto:
	default:
		return "", "", fmt.Errorf("--backend %q: want tcp, nccl or auto", flag)
	}
	why := f.NCCLUnusable()
	switch {
	case why == "":
		return BackendNCCL, fmt.Sprintf("backend nccl (NCCL %s, %d GPU(s))", ncclVersion(f.NCCL), f.GPUs), nil
	case flag == BackendNCCL:
		return "", "", fmt.Errorf("--backend nccl: %s", why)
	}
	why, _, _ = strings.Cut(why, " (use ") // the fix is for --backend nccl; auto has chosen
	return BackendTCP, "backend tcp (auto: " + why + ")", nil
}

// NCCLUnusable is why NCCL cannot carry this run, or "".
func (f BackendFacts) NCCLUnusable() string {
	switch {
	case f.Device != "cuda":
		return fmt.Sprintf("NCCL moves GPU tensors and this run computes on the %s (use --device cuda, or --backend tcp)", f.Device)
	case !f.Stage:
		return "the stage loop does not hand device tensors to NCCL in this build (use --backend tcp)"
	case f.GPUErr != nil:
		return fmt.Sprintf("no GPU: %v", f.GPUErr)
	case f.GPUs == 0:
		return "no GPU visible (check CUDA_VISIBLE_DEVICES)"
	case f.NCCLErr != nil:
		return fmt.Sprintf("NCCL did not load: %v", f.NCCLErr)
	case f.Ranks > f.GPUs && f.NCCL < 23000:
		return fmt.Sprintf("%d ranks on %d GPU(s), and NCCL %s refuses two ranks on one GPU (NCCL 2.30 or newer allows it with NCCL_MULTI_RANK_GPU_ENABLE=1)", f.Ranks, f.GPUs, ncclVersion(f.NCCL))
	case f.Ranks > f.GPUs && !f.MultiRank:
		return fmt.Sprintf("%d ranks on %d GPU(s): set NCCL_MULTI_RANK_GPU_ENABLE=1 to let NCCL %s put several ranks on one GPU (experimental), or start at most %d ranks", f.Ranks, f.GPUs, ncclVersion(f.NCCL), f.GPUs)
	}
	return ""
}

// ncclVersion spells ncclGetVersion's code as major.minor.patch ("?" for 0).
func ncclVersion(code int) string {
	if code == 0 {
		return "?"
	}
	return fmt.Sprintf("%d.%d.%d", code/10000, code/100%100, code%100)
}

// TransfersOver is the run's start-line note of where the transfers go
// with the chosen backend.
func TransfersOver(backend string) string {
	if backend == BackendNCCL {
		return "; device tensors over nccl, host messages over tcp"
	}
	return "; transfers over tcp"
}
