package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// runAgents starts cmds with their output in dir/node<i>.log, waits for all,
// and stops the rest (SIGTERM, then SIGKILL after 10 s) when one fails.
func runAgents(ctx context.Context, cancel context.CancelFunc, cmds []*exec.Cmd, env []string, dir string) error {
	errs := make(chan error, len(cmds))
	logs := make([]string, len(cmds))
	for i, cmd := range cmds {
		logs[i] = filepath.Join(dir, fmt.Sprintf("node%d.log", i))
		f, err := os.Create(logs[i])
		if err != nil {
			cancel()
			return err
		}
		defer f.Close()
		cmd.Env, cmd.Stdout, cmd.Stderr = env, f, f
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		// Should bench scaling die, the agent stops its ranks and ends.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
		cmd.WaitDelay = 10 * time.Second
		if err := cmd.Start(); err != nil {
			cancel()
			return fmt.Errorf("start %s: %w", cmd.Path, err)
		}
		go func(i int) {
			err := cmd.Wait()
			if err != nil {
				err = fmt.Errorf("node %d: %w; its log %s ends:\n%s", i, err, logs[i], tail(logs[i], 12))
				cancel()
			}
			errs <- err
		}(i)
	}
	var all []error
	for range cmds {
		if err := <-errs; err != nil {
			all = append(all, err)
		}
	}
	if len(all) == 0 {
		return nil
	}
	if ctx.Err() == context.DeadlineExceeded {
		all = append([]error{fmt.Errorf("did not finish within --timeout")}, all...)
	}
	return errors.Join(all...)
}

// cleanLauncherEnv drops the launcher's own settings from env, which would
// override the flags each size's agents are given.
func cleanLauncherEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PPLAUNCH_NNODES", "PPLAUNCH_NODE_RANK", "PPLAUNCH_RDZV_ENDPOINT", "PPLAUNCH_NPROC", "PPLAUNCH_DIRECT", "PPLAUNCH_TOKEN":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// newToken is a fresh secret for one size's agents.
func newToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// tail is the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
