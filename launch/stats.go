package launch

import (
	"time"

	"github.com/prometheus/procfs"
)

// usage is a rank's resource use.
type usage struct {
	peakRSS uint64        // bytes: VmHWM, sampled from /proc while the rank runs (0: never sampled)
	cpu     time.Duration // user + system
}

// sample reads pid's high-water RSS and CPU time from /proc.
func sample(pid int) (usage, bool) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return usage{}, false
	}
	st, err := p.NewStatus()
	if err != nil {
		return usage{}, false
	}
	stat, err := p.Stat()
	if err != nil {
		return usage{}, false
	}
	return usage{peakRSS: st.VmHWM, cpu: time.Duration(stat.CPUTime() * float64(time.Second))}, true
}

// addExit folds in the kernel's CPU accounting at exit (the user and system
// time of wait4's rusage, as the keeper reports it), which covers the rank's
// last moments and its reaped children. (Its ru_maxrss is not used: Linux
// carries the forking process's RSS into it across exec.)
func (u usage) addExit(cpu time.Duration) usage {
	u.cpu = max(u.cpu, cpu)
	return u
}
