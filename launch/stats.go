package launch

import (
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// usage is a rank's resource use.
type usage struct {
	peakRSS uint64        // bytes
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

// merge folds the kernel's accounting at exit (wait4's rusage: it covers the
// rank's last moments and its reaped children, which /proc no longer shows)
// into what was sampled from /proc while the rank ran.
func (u usage) merge(ru *syscall.Rusage) usage {
	if ru == nil {
		return u
	}
	u.peakRSS = max(u.peakRSS, uint64(ru.Maxrss)*1024) // Linux reports KiB
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	u.cpu = max(u.cpu, cpu)
	return u
}
