package sgemm

import (
	"os"
	"strconv"
	"strings"
)

// readCaches reads cpu0's data cache sizes from sysfs; a size it cannot read
// stays 0 (ChooseBlocks then uses its defaults).
func readCaches() Caches {
	var c Caches
	for i := range 8 {
		dir := "/sys/devices/system/cpu/cpu0/cache/index" + strconv.Itoa(i) + "/"
		typ, err := os.ReadFile(dir + "type")
		if err != nil {
			break
		}
		if strings.TrimSpace(string(typ)) == "Instruction" {
			continue
		}
		lvl, _ := os.ReadFile(dir + "level")
		size, _ := os.ReadFile(dir + "size")
		n := parseSize(strings.TrimSpace(string(size)))
		switch strings.TrimSpace(string(lvl)) {
		case "1":
			c.L1 = n
		case "2":
			c.L2 = n
		case "3":
			c.L3 = n
		}
	}
	return c
}

// parseSize reads sysfs's "48K", "2048K", "32M"; 0 when it cannot.
func parseSize(s string) int {
	mult := 1
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0
	}
	return n * mult
}
