package netns

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// tagMark marks the /etc/hosts lines this package writes, so it can remove them
// again, including lines left by a test binary that was killed.
const tagMark = "# pplaunch-netns slot="

// hostsTag identifies one line this package wrote: which slot, which host name.
type hostsTag struct {
	slot int
	name string
}

func (t hostsTag) line(addr netip.Addr) string {
	return fmt.Sprintf("%s\t%s\t%s%d\n", addr, t.name, tagMark, t.slot)
}

// parseHostsLine recognises a line written by hostsTag.line.
func parseHostsLine(line string) (hostsTag, bool) {
	body, tag, ok := strings.Cut(line, tagMark)
	if !ok {
		return hostsTag{}, false
	}
	slot, err := strconv.Atoi(strings.TrimSpace(tag))
	if err != nil || slot < 1 || slot > maxSlot {
		return hostsTag{}, false
	}
	f := strings.Fields(body)
	if len(f) != 2 || !validHostName(f[1]) {
		return hostsTag{}, false
	}
	if _, err := netip.ParseAddr(f[0]); err != nil {
		return hostsTag{}, false
	}
	return hostsTag{slot: slot, name: f[1]}, true
}

// dropLines removes the tagged lines for which drop is true; every other line
// stays byte for byte.
func dropLines(content string, drop func(hostsTag) bool) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(content, "\n") {
		if t, ok := parseHostsLine(strings.TrimSuffix(line, "\n")); ok && drop(t) {
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}

// foreignLine finds a line not written by this package that gives name an
// address, and returns it.
func foreignLine(content, name string) (string, bool) {
	for _, line := range strings.Split(content, "\n") {
		if _, ok := parseHostsLine(line); ok {
			continue
		}
		body, _, _ := strings.Cut(line, "#")
		f := strings.Fields(body)
		if len(f) < 2 {
			continue
		}
		for _, alias := range f[1:] {
			if strings.EqualFold(alias, name) {
				return line, true
			}
		}
	}
	return "", false
}
