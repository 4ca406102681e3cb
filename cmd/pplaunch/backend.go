package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/contract"
	"github.com/pplaunch/pplaunch/launch"
)

// backendEnv carries the agent's choice of communicator backend to its
// ranks, so that every rank of a node uses the same one.
const backendEnv = "PPLAUNCH_BACKEND"

// backendFacts are what the choice of backend depends on.
type backendFacts struct {
	Device    string // where tensors live: "cpu" or "cuda"
	Stage     bool   // the program hands device tensors to the communicator
	Ranks     int    // ranks on this node (0: unknown)
	GPUs      int    // visible GPUs
	GPUErr    error  // why there are none, if there are none
	NCCL      int    // ncclGetVersion's code, 0 when NCCLErr
	NCCLErr   error  // why NCCL did not load
	MultiRank bool   // NCCL_MULTI_RANK_GPU_ENABLE=1
}

// chooseBackend decides the communicator for --backend flag: tcp always
// works; nccl needs GPU tensors, a GPU for every rank (or NCCL 2.30's
// several ranks per GPU, when enabled) and NCCL; auto takes nccl when it
// can and says why not otherwise. note is what the agent prints.
func chooseBackend(flag string, f backendFacts) (choice, note string, err error) {
	switch flag {
	case "tcp":
		return "tcp", "", nil
	case "nccl", "auto":
	default:
		return "", "", fmt.Errorf("--backend %q: want tcp, nccl or auto", flag)
	}
	why := ncclUnusable(f)
	switch {
	case why == "":
		return "nccl", fmt.Sprintf("backend nccl (NCCL %s, %d GPU(s))", ncclVersion(f.NCCL), f.GPUs), nil
	case flag == "nccl":
		return "", "", fmt.Errorf("--backend nccl: %s", why)
	}
	why, _, _ = strings.Cut(why, " (use ") // the fix is for --backend nccl; auto has chosen
	return "tcp", "backend tcp (auto: " + why + ")", nil
}

// ncclUnusable is why NCCL cannot carry this run, or "".
func ncclUnusable(f backendFacts) string {
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

func ncclVersion(code int) string {
	if code == 0 {
		return "?"
	}
	return fmt.Sprintf("%d.%d.%d", code/10000, code/100%100, code%100)
}

// probeBackend gathers the facts from the machine: the libraries are loaded
// only when the flag is not tcp.
func probeBackend(flag, device string, stage bool, ranks int, getenv func(string) string) backendFacts {
	f := backendFacts{Device: device, Stage: stage, Ranks: ranks, MultiRank: getenv("NCCL_MULTI_RANK_GPU_ENABLE") == "1"}
	if flag == "tcp" || device != "cuda" {
		return f
	}
	f.GPUs, f.GPUErr = collective.ProbeGPUs()
	f.NCCL, _, f.NCCLErr = collective.ProbeNCCL()
	return f
}

// resolveBackend is the backend a process of the job uses. A rank takes its
// agent's choice; the agent (or a rank without one) decides, and the agent
// prints what it chose and passes it on through the environment. An error
// is to be reported before anything starts (exit 2).
func resolveBackend(flag, device string, stage bool, f launch.Flags, getenv func(string) string, setenv func(k, v string) error, stderr io.Writer) (string, error) {
	if v := getenv(backendEnv); v != "" && getenv(contract.EnvRole) == contract.RoleRank {
		if v != "tcp" && v != "nccl" {
			return "", fmt.Errorf("%s=%q: want tcp or nccl", backendEnv, v)
		}
		return v, nil
	}
	ranks := 0
	if lc, err := launch.Resolve(f, getenv); err == nil {
		ranks = lc.NProc
	}
	choice, note, err := chooseBackend(flag, probeBackend(flag, device, stage, ranks, getenv))
	if err != nil {
		return "", err
	}
	if note != "" && getenv(contract.EnvRole) != contract.RoleRank {
		fmt.Fprintln(stderr, "pplaunch:", note)
	}
	if setenv == nil {
		return choice, errors.New("no way to pass the backend to the ranks")
	}
	return choice, setenv(backendEnv, choice)
}
