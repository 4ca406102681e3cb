package ranks

import (
	"github.com/prometheus/procfs"
)

// rssBytes is this process's resident set size from /proc/self/stat, 0
// where there is no procfs.
func rssBytes() int64 {
	p, err := procfs.Self()
	if err != nil {
		return 0
	}
	st, err := p.Stat()
	if err != nil {
		return 0
	}
	return int64(st.ResidentMemory())
}
