package slurmtest

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pplaunch/pplaunch/launch/netns"
)

// The sbatch scripts parse as bash and run srun the way each mode needs, also on
// machines where the real-Slurm test skips.
func TestExampleScripts(t *testing.T) {
	dir := filepath.Join(moduleRoot(t), "examples", "slurm")
	for script, want := range map[string][]string{
		"agent-per-node.sbatch": {"#SBATCH --ntasks-per-node=1", "srun --ntasks-per-node=1", `--nproc "${NPROC:-4}" "$@"`},
		"rank-per-task.sbatch":  {"#SBATCH --ntasks-per-node=4", "srun --ntasks-per-node=", `--direct "$@"`},
	} {
		path := filepath.Join(dir, script)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("bash", "-n", path).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", script, err, out)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable (%v)", script, err)
		}
		for _, w := range append(want, "#!/bin/bash\n", "#SBATCH --nodes=2", `"${PPLAUNCH:-pplaunch}"`, "if [ $# -eq 0 ]; then set -- train; fi") {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s lacks %q", script, w)
			}
		}
	}
}

func TestConf(t *testing.T) {
	nodes := []*netns.Host{
		{Name: "n1", Addr: netip.MustParseAddr("10.77.3.1")},
		{Name: "n2", Addr: netip.MustParseAddr("10.77.3.2")},
	}
	conf, gres := Conf(ConfParams{Dir: "/tmp/x", CtldHost: "vm", CtldAddr: "10.77.3.254", CtldPort: 41000,
		MungeSocket: "/tmp/x/munge/munge.socket", Nodes: nodes, CPUs: 8, GPUs: 3})
	if want := "NodeName=n1 Name=gpu File=/tmp/x/dev/gpu[0-2]\nNodeName=n2 Name=gpu File=/tmp/x/dev/gpu[0-2]\n"; gres != want {
		t.Errorf("gres.conf:\n%s\nwant\n%s", gres, want)
	}
	for _, want := range []string{
		"\nSlurmctldHost=vm(10.77.3.254)\n",
		"\nSlurmctldPort=41000\n",
		"\nAuthInfo=socket=/tmp/x/munge/munge.socket\n",
		"\nSlurmdSpoolDir=/tmp/x/spool/%n\n",
		"\nGresTypes=gpu\n",
		"\nNodeName=n1 NodeAddr=10.77.3.1 CPUs=8 Gres=gpu:3 State=UNKNOWN\n",
		"\nNodeName=n2 NodeAddr=10.77.3.2 CPUs=8 Gres=gpu:3 State=UNKNOWN\n",
		"\nPartitionName=test Nodes=n1,n2 Default=YES MaxTime=10 State=UP\n",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("slurm.conf lacks %q:\n%s", strings.TrimSpace(want), conf)
		}
	}
	if conf, gres := Conf(ConfParams{Nodes: nodes, CPUs: 8}); gres != "" || strings.Contains(conf, "gpu") {
		t.Errorf("without GPUs: gres.conf %q, slurm.conf mentions gpu:\n%s", gres, conf)
	}
}
