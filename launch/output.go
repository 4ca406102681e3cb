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

// console serialises whole lines from many ranks onto one writer.
type console struct {
	mu sync.Mutex
	w  io.Writer
}

func (c *console) write(prefix string, chunk []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if prefix != "" {
		io.WriteString(c.w, prefix)
	}
	c.w.Write(chunk)
}

// line writes one of the agent's own lines.
func (c *console) line(s string) {
	c.write("", []byte(s+"\n"))
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
// con is not nil), to file (when not nil), and into tl (when not nil).
func pump(r io.Reader, con *console, prefix string, file io.Writer, tl *tail) {
	br := bufio.NewReaderSize(r, 64<<10)
	atStart := true
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if con != nil {
				p := ""
				if atStart {
					p = prefix
				}
				con.write(p, chunk)
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
			if !atStart && con != nil {
				con.write("", []byte("\n")) // end the rank's last, unterminated line
			}
			return
		}
	}
}
