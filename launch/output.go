package launch

import (
	"bufio"
	"bytes"
	"io"
	"sync"
)

// tailLines is how many of a rank's last stderr lines the summary shows.
const tailLines = 20

// maxTailLine bounds one remembered line.
const maxTailLine = 512

// maxConsoleLine is the longest part of a rank's line the console shows as
// one line: a longer line is split into parts of this size, each on its own
// console line with the rank's tag, so that no rank's output lands inside
// another's line and no part loses its tag. (The --log-dir files keep the
// lines whole.)
const maxConsoleLine = 64 << 10

// console serialises whole lines from many ranks onto one writer.
type console struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// write writes prefix and chunk as one line (a newline is added when chunk
// has none), in one Write.
func (c *console) write(prefix string, chunk []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf = append(append(c.buf[:0], prefix...), chunk...)
	if len(chunk) == 0 || chunk[len(chunk)-1] != '\n' {
		c.buf = append(c.buf, '\n')
	}
	c.w.Write(c.buf)
	if cap(c.buf) > 2*maxConsoleLine {
		c.buf = nil
	}
}

// line writes one of the agent's own lines.
func (c *console) line(s string) {
	c.write("", []byte(s))
}

// tail keeps the last tailLines lines written to it.
type tail struct {
	mu    sync.Mutex
	lines []string
}

func (t *tail) add(line []byte) {
	line = bytes.TrimRight(line, "\r\n")
	if len(line) > maxTailLine {
		line = append(line[:maxTailLine:maxTailLine], "..."...)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == tailLines {
		copy(t.lines, t.lines[1:])
		t.lines = t.lines[:tailLines-1]
	}
	t.lines = append(t.lines, string(line))
}

func (t *tail) get() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.lines...)
}

// pump copies a rank's stream line by line: to the console with prefix (when
// con is not nil; lines longer than maxConsoleLine in tagged parts), to file
// (when not nil, unchanged), and into tl (when not nil).
func pump(r io.Reader, con *console, prefix string, file io.Writer, tl *tail) {
	// The line buffer is made once the stream has something to say: a rank
	// that prints nothing costs no 64 KiB buffer (at 64 ranks, 8 MiB and the
	// collections they caused).
	var first [512]byte
	n, err := r.Read(first[:])
	if n == 0 && err != nil {
		return
	}
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(first[:n]), r), maxConsoleLine)
	atStart := true
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if con != nil {
				con.write(prefix, chunk)
			}
			if file != nil {
				file.Write(chunk)
			}
			if tl != nil && atStart {
				tl.add(chunk)
			}
			atStart = chunk[len(chunk)-1] == '\n'
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return
		}
	}
}
