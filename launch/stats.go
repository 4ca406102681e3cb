package launch

import (
	"syscall"
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

// addExit folds in the kernel's CPU accounting at exit (wait4's rusage),
// which covers the rank's last moments and its reaped children. Its ru_maxrss
// is not used: Linux carries the forking agent's RSS into it across exec.
func (u usage) addExit(ru *syscall.Rusage) usage {
	if ru != nil {
		u.cpu = max(u.cpu, time.Duration(ru.Utime.Nano()+ru.Stime.Nano()))
	}
	return u
}
