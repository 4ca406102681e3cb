package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/pplaunch/pplaunch/collective"
	"github.com/pplaunch/pplaunch/contract"
	"github.com/pplaunch/pplaunch/launch"
)

// resolveBackend is the backend a process of the job uses. A rank takes its
// agent's choice; the agent (or a rank without one) decides
// (collective.ChooseBackend), and the agent prints what it chose and passes
// it on through the environment. An error is to be reported before anything
// starts (exit 2).
func resolveBackend(flag, device string, stage bool, f launch.Flags, getenv func(string) string, setenv func(k, v string) error, stderr io.Writer) (string, error) {
	if v := getenv(contract.EnvBackend); v != "" && getenv(contract.EnvRole) == contract.RoleRank {
		if v != collective.BackendTCP && v != collective.BackendNCCL {
			return "", fmt.Errorf("%s=%q: want tcp or nccl", contract.EnvBackend, v)
		}
		return v, nil
	}
	ranks := 0
	if lc, err := launch.Resolve(f, getenv); err == nil {
		ranks = lc.NProc
	}
	choice, note, err := collective.ChooseBackend(flag, collective.ProbeBackend(flag, device, stage, ranks, getenv))
	if err != nil {
		return "", err
	}
	if note != "" && getenv(contract.EnvRole) != contract.RoleRank {
		fmt.Fprintln(stderr, "pplaunch:", note)
	}
	if setenv == nil {
		return choice, errors.New("no way to pass the backend to the ranks")
	}
	return choice, setenv(contract.EnvBackend, choice)
}
