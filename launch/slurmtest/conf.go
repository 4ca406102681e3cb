package slurmtest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/pplaunch/pplaunch/launch/netns"
)

// ConfParams is what Conf needs to know.
type ConfParams struct {
	Dir         string // everything lives under it; gres.conf's device files in Dir/dev
	CtldHost    string // slurmctld's host name (the machine's short name)
	CtldAddr    string // where the nodes reach slurmctld: the bridge
	CtldPort    int
	MungeSocket string
	Nodes       []*netns.Host // one slurmd each, at its namespace's address
	CPUs, GPUs  int           // per node
}

// Conf renders slurm.conf and gres.conf (empty without GPUs): slurmctld on the
// machine, one slurmd per node, all nodes in one default partition.
func Conf(p ConfParams) (slurmConf, gresConf string) {
	var b, g strings.Builder
	fmt.Fprintf(&b, `# Written by launch/slurmtest for one test run.
ClusterName=pplaunchtest
SlurmctldHost=%[2]s(%[3]s)
SlurmctldPort=%[4]d
SlurmdPort=6818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=%[5]s
CredType=cred/munge
StateSaveLocation=%[1]s/state
SlurmdSpoolDir=%[1]s/spool/%%n
SlurmctldPidFile=%[1]s/slurmctld.pid
SlurmdPidFile=%[1]s/slurmd.%%n.pid
SlurmctldLogFile=%[1]s/slurmctld.log
SlurmdLogFile=%[1]s/slurmd.%%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=0
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
KillWait=5
MinJobAge=300
InactiveLimit=0
`, p.Dir, p.CtldHost, p.CtldAddr, p.CtldPort, p.MungeSocket)
	gres := ""
	if p.GPUs > 0 {
		b.WriteString("GresTypes=gpu\n")
		gres = fmt.Sprintf(" Gres=gpu:%d", p.GPUs)
	}
	var names []string
	for _, h := range p.Nodes {
		fmt.Fprintf(&b, "NodeName=%s NodeAddr=%s CPUs=%d%s State=UNKNOWN\n", h.Name, h.Addr, p.CPUs, gres)
		if p.GPUs > 0 {
			fmt.Fprintf(&g, "NodeName=%s Name=gpu File=%s/dev/gpu[0-%d]\n", h.Name, p.Dir, p.GPUs-1)
		}
		names = append(names, h.Name)
	}
	fmt.Fprintf(&b, "PartitionName=test Nodes=%s Default=YES MaxTime=10 State=UP\n", strings.Join(names, ","))
	return b.String(), g.String()
}

func (c *Cluster) writeConf(mungeSocket string, opts Options) error {
	host, err := os.Hostname()
	if err != nil {
		return err
	}
	host, _, _ = strings.Cut(host, ".")
	// A free port for slurmctld on the machine; slurmds each have their own
	// network namespace, so the standard port is free there.
	ln, err := net.Listen("tcp4", ":0")
	if err != nil {
		return err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dirs := []string{"state", "dev"}
	for _, h := range c.Nodes {
		dirs = append(dirs, filepath.Join("spool", h.Name))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(c.Dir, d), 0o755); err != nil {
			return err
		}
	}
	// Slurm only checks that a GPU's file is a character device; these are
	// /dev/null's numbers, so nothing can be harmed through them.
	for i := range opts.GPUs {
		dev := filepath.Join(c.Dir, "dev", fmt.Sprintf("gpu%d", i))
		if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, int(unixMkdev(1, 3))); err != nil {
			return fmt.Errorf("fake GPU %s: mknod: %v", dev, err)
		}
	}
	conf, gres := Conf(ConfParams{Dir: c.Dir, CtldHost: host, CtldAddr: c.Net.Gateway.String(), CtldPort: port,
		MungeSocket: mungeSocket, Nodes: c.Nodes, CPUs: opts.CPUs, GPUs: opts.GPUs})
	if gres != "" {
		if err := os.WriteFile(filepath.Join(c.Dir, "gres.conf"), []byte(gres), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(c.Conf, []byte(conf), 0o644)
}

// unixMkdev packs a device number as Linux does (glibc's makedev).
func unixMkdev(major, minor uint64) uint64 {
	return (major&0xfff)<<8 | (major&^0xfff)<<32 | minor&0xff | (minor&^0xff)<<12
}
