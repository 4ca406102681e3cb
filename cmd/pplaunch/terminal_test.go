package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoTerminalQueryAtStart: pplaunch started on a terminal writes nothing
// to it that it did not mean to print. A package that asks the terminal for
// its colours at init (OSC 11, a cursor report) would put escape sequences
// on every launch's console and, where the terminal never answers (a pipe
// behind a pty, a serial console), wait seconds for the reply.
func TestNoTerminalQueryAtStart(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("no script(1) to give pplaunch a terminal (util-linux)")
	}
	bin := binary(t)
	cmd := exec.Command(script, "-qec", bin+" --help", "/dev/null")
	cmd.Env = append(cmd.Environ(), "TERM=xterm-256color", "COLORTERM=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pplaunch --help on a terminal: %v\n%q", err, out)
	}
	for _, q := range []string{"\x1b]11;?", "\x1b]10;?", "\x1b[6n"} {
		if strings.Contains(string(out), q) {
			t.Errorf("pplaunch --help wrote the terminal query %q to its terminal:\n%q", q, out)
		}
	}
	if !strings.Contains(string(out), "--nproc") {
		t.Errorf("pplaunch --help on a terminal printed no help:\n%q", out)
	}
}
