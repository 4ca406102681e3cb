package main

import (
	"strconv"

	"github.com/pplaunch/pplaunch/contract"
	"github.com/pplaunch/pplaunch/launch"
	"github.com/pplaunch/pplaunch/models/tensor"
)

// visibleGPUs counts the GPUs --device cuda finds (a variable so that tests
// can stand in for a machine with GPUs).
var visibleGPUs = tensor.GPUs

// prepareDevice is the agent's check that the device can be used, before any
// rank starts: with --device cuda, the NVIDIA libraries load and see a GPU
// (else one message naming what was looked for and where), and --nproc auto
// becomes the number of GPUs. Inside a rank, or under --direct, it checks
// nothing: the rank opens its device itself (tensor.Open).
func (c *trainCmd) prepareDevice(f launch.Flags, getenv func(string) string) (launch.Flags, error) {
	if err := tensor.CheckDevice(c.Device); err != nil {
		return f, err
	}
	if c.Device != tensor.DeviceCUDA || f.Direct || getenv(contract.EnvRole) == contract.RoleRank {
		return f, nil
	}
	n, err := visibleGPUs()
	if err != nil {
		return f, err
	}
	if f.NProc == "auto" {
		f.NProc = strconv.Itoa(n)
	}
	return f, nil
}
