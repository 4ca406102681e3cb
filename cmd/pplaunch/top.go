package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/pplaunch/pplaunch/ranks/live"
)

// topCmd is `pplaunch top`: the live view of a running job in the terminal.
type topCmd struct {
	Addr     string        `arg:"positional" placeholder:"ADDR" help:"the address train --metrics-addr serves (HOST:PORT, or :PORT for loopback)" default:"127.0.0.1:9400"`
	Interval durationValue `arg:"--interval" help:"how often to refresh" default:"1s"`
	Once     bool          `arg:"--once" help:"print the state once and exit (what it does when stdout is not a terminal is print a snapshot every interval until the run ends)"`
}

func (c *topCmd) run(ctx context.Context, stdout, stderr io.Writer) error {
	url, err := live.StateURL(c.Addr)
	if err != nil {
		return exitError{code: 2, err: fmt.Errorf("top: %w", err)}
	}
	if c.Interval.D() <= 0 {
		return exitError{code: 2, err: errors.New("top: --interval must be positive, e.g. 1s")}
	}
	st, err := live.FetchState(ctx, url)
	if err != nil {
		return fmt.Errorf("top: %w", err)
	}
	if f, ok := stdout.(*os.File); ok && isTerminal(f) && !c.Once {
		return c.interactive(ctx, url, st, f)
	}
	for {
		fmt.Fprint(stdout, live.Text(st, 0, live.Style{}))
		if c.Once || st.Run.Done {
			return nil
		}
		if st.Run.Ended {
			// This attempt's rank 0 has stopped; a restarted one serves
			// the same address.
			st, err = c.waitRestart(ctx, url)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout)
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(c.Interval.D()):
		}
		if st, err = live.FetchState(ctx, url); err != nil {
			// The run ended between two reads, or is restarting.
			return fmt.Errorf("top: %w", err)
		}
		fmt.Fprintln(stdout)
	}
}

// waitRestart reads the state until a restarted group's rank 0 answers, for
// as long as a rendezvous may take.
func (c *topCmd) waitRestart(ctx context.Context, url string) (live.State, error) {
	for deadline := time.Now().Add(15 * time.Minute); ; {
		select {
		case <-ctx.Done():
			return live.State{}, ctx.Err()
		case <-time.After(c.Interval.D()):
		}
		if st, err := live.FetchState(ctx, url); err == nil && !st.Run.Ended {
			return st, nil
		} else if time.Now().After(deadline) {
			return st, fmt.Errorf("top: the job did not come back after its attempt ended: %v", err)
		}
	}
}

// interactive redraws the state in place until q or Ctrl-C.
func (c *topCmd) interactive(ctx context.Context, url string, st live.State, out *os.File) error {
	bad, head := lipgloss.NewStyle().Foreground(lipgloss.Color("9")).Bold(true), lipgloss.NewStyle().Bold(true)
	m := topModel{url: url, every: c.Interval.D(), st: st, ctx: ctx, style: live.Style{
		Bad:  func(s string) string { return bad.Render(s) },
		Head: func(s string) string { return head.Render(s) },
	}}
	_, err := tea.NewProgram(m, tea.WithOutput(out), tea.WithContext(ctx)).Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// topModel is the terminal view: the last state read, and the error of the
// last read (the job restarting, or gone).
type topModel struct {
	ctx   context.Context
	url   string
	every time.Duration
	st    live.State
	err   error
	width int
	style live.Style
}

type stateMsg struct {
	st  live.State
	err error
}

func (m topModel) fetch() tea.Cmd {
	return tea.Tick(m.every, func(time.Time) tea.Msg {
		st, err := live.FetchState(m.ctx, m.url)
		return stateMsg{st, err}
	})
}

func (m topModel) Init() tea.Cmd { return m.fetch() }

func (m topModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		switch msg.String() {
		case "q", "ctrl+c", "esc":
			return m, tea.Quit
		}
	case tea.WindowSizeMsg:
		m.width = msg.Width
	case stateMsg:
		m.err = msg.err
		if msg.err == nil {
			m.st = msg.st
		}
		return m, m.fetch()
	}
	return m, nil
}

// View is the whole screen, on the terminal's alternate screen (restored at
// exit).
func (m topModel) View() tea.View {
	view := tea.NewView(m.text())
	view.AltScreen = true
	return view
}

func (m topModel) text() string {
	v := live.Text(m.st, m.width, m.style)
	switch {
	case m.err != nil && m.st.Run.Done:
		v += "\nthe run has ended; this is its final state. q quits."
	case m.err != nil:
		v += "\n" + m.style.Bad("rank 0 does not answer (restarting, or ended): "+m.err.Error())
	default:
		v += "\nq quits."
	}
	return v
}
