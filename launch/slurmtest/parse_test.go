package slurmtest

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
)

func TestParseOneLiner(t *testing.T) {
	line := "JobId=7 JobName=pplaunch UserId=root(0) JobState=COMPLETED Reason=None ExitCode=0:0 " +
		"NodeList=n[1-2] Command=/tmp/a b/run.sbatch -- sh -c x WorkDir=/tmp StdOut=/tmp/job-7.out\n"
	got := ParseOneLiner(line)
	for k, want := range map[string]string{
		"JobId": "7", "JobState": "COMPLETED", "ExitCode": "0:0", "NodeList": "n[1-2]",
		"UserId": "root(0)", "Command": "/tmp/a b/run.sbatch -- sh -c x", "StdOut": "/tmp/job-7.out",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	// A word with '=' inside a value after a '/' stays in the value: paths are not keys.
	if got := ParseOneLiner("Command=/bin/x a/b=c Next=1"); got["Command"] != "/bin/x a/b=c" || got["Next"] != "1" {
		t.Errorf("got %q", got)
	}
	if got := ParseOneLiner("words before any key"); len(got) != 0 {
		t.Errorf("got %q, want nothing", got)
	}
}

func TestJobEnded(t *testing.T) {
	for state, want := range map[string]bool{
		"PENDING": false, "RUNNING": false, "COMPLETING": false, "CONFIGURING": false,
		"COMPLETED": true, "FAILED": true, "CANCELLED": true, "TIMEOUT": true, "NODE_FAIL": true, "": false,
	} {
		if JobEnded(state) != want {
			t.Errorf("JobEnded(%q) = %v", state, !want)
		}
	}
}

func TestParseNodeStates(t *testing.T) {
	got, err := ParseNodeStates("n1|idle\nn2|down*\n")
	if err != nil || !maps.Equal(got, map[string]string{"n1": "idle", "n2": "down*"}) {
		t.Errorf("got %v, %v", got, err)
	}
	if got, err := ParseNodeStates(""); err != nil || len(got) != 0 {
		t.Errorf("empty: got %v, %v", got, err)
	}
	for _, bad := range []string{"n1 idle", "n1|", "|idle"} {
		if _, err := ParseNodeStates(bad); err == nil {
			t.Errorf("ParseNodeStates(%q): no error", bad)
		}
	}
}

func TestParseReport(t *testing.T) {
	r, err := ParseReport([]byte("REPORT_HOST=n2\x00RANK=5\x00MULTI=a\nb=c\x00EMPTY=\x00"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Host != "n2" || !maps.Equal(r.Env, map[string]string{"RANK": "5", "MULTI": "a\nb=c", "EMPTY": ""}) {
		t.Errorf("got %+v", r)
	}
	for _, bad := range []string{"", "RANK=5\x00", "REPORT_HOST=\x00RANK=1", "REPORT_HOST=n1\x00junk\x00", "REPORT_HOST=n1\x00=x"} {
		if _, err := ParseReport([]byte(bad)); err == nil {
			t.Errorf("ParseReport(%q): no error", bad)
		}
	}
}

// world builds the reports of a correct 2x4 world, for mutation.
func world() []Rank {
	var ranks []Rank
	for node, host := range []string{"n1", "n2"} {
		for local := range 4 {
			ranks = append(ranks, Rank{Host: host, Env: map[string]string{
				"RANK": strconv.Itoa(node*4 + local), "LOCAL_RANK": strconv.Itoa(local),
				"NODE_RANK": strconv.Itoa(node), "GROUP_RANK": strconv.Itoa(node),
				"WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4", "MASTER_ADDR": "n1", "MASTER_PORT": "29500",
			}})
		}
	}
	return ranks
}

func TestCheckWorld(t *testing.T) {
	nodes, masters := []string{"n1", "n2"}, []string{"n1", "10.77.1.1"}
	if err := CheckWorld(world(), nodes, 4, masters); err != nil {
		t.Fatalf("a correct world: %v", err)
	}
	for _, tc := range []struct {
		name   string
		mutate func([]Rank) []Rank
		want   string
	}{
		{"missing rank", func(w []Rank) []Rank { return w[:7] }, "7 ranks reported, want 8"},
		{"duplicate rank", func(w []Rank) []Rank { w[5].Env["RANK"] = "4"; return w }, "RANK=4 reported twice"},
		{"rank out of range", func(w []Rank) []Rank { w[7].Env["RANK"] = "8"; return w }, "RANK=8 outside 0..7"},
		{"no RANK", func(w []Rank) []Rank { delete(w[0].Env, "RANK"); return w }, "RANK not set"},
		{"world size", func(w []Rank) []Rank { w[2].Env["WORLD_SIZE"] = "4"; return w }, "WORLD_SIZE=4, want 8"},
		{"local world size", func(w []Rank) []Rank { w[2].Env["LOCAL_WORLD_SIZE"] = "8"; return w }, "LOCAL_WORLD_SIZE=8, want 4"},
		{"wrong host", func(w []Rank) []Rank { w[6].Host = "n1"; return w }, "NODE_RANK=1 is n2, but the rank ran on n1"},
		{"all on one host", func(w []Rank) []Rank {
			for i := range w {
				w[i].Host = "n1"
			}
			return w
		}, "n2 ran 0 ranks, want 4"},
		{"group rank", func(w []Rank) []Rank { w[4].Env["GROUP_RANK"] = "0"; return w }, "GROUP_RANK=0 but NODE_RANK=1"},
		{"rank order", func(w []Rank) []Rank {
			w[0].Env["RANK"], w[4].Env["RANK"] = "4", "0"
			return w
		}, "want NODE_RANK*4+LOCAL_RANK = 0"},
		{"master differs", func(w []Rank) []Rank { w[5].Env["MASTER_ADDR"] = "n2"; return w }, "ranks disagree on MASTER_ADDR"},
		{"master not first node", func(w []Rank) []Rank {
			for i := range w {
				w[i].Env["MASTER_ADDR"] = "n2"
			}
			return w
		}, "MASTER_ADDR=n2, want the first node"},
		{"no master port", func(w []Rank) []Rank { w[3].Env["MASTER_PORT"] = ""; return w }, "MASTER_PORT not set"},
		{"not a number", func(w []Rank) []Rank { w[1].Env["LOCAL_RANK"] = "one"; return w }, `LOCAL_RANK="one" is not`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckWorld(tc.mutate(world()), nodes, 4, masters)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func FuzzParseOneLiner(f *testing.F) {
	f.Add("JobId=7 JobState=COMPLETED ExitCode=0:0 Command=/x y")
	f.Add("=a b= c")
	f.Fuzz(func(t *testing.T, line string) {
		for k := range ParseOneLiner(line) {
			if k == "" || strings.ContainsAny(k, " \t\n/") {
				t.Fatalf("key %q from %q", k, line)
			}
		}
	})
}

func FuzzParseNodeStates(f *testing.F) {
	f.Add("n1|idle\nn2|down*\n")
	f.Add("|\n")
	f.Fuzz(func(t *testing.T, out string) {
		states, err := ParseNodeStates(out)
		if err != nil {
			return
		}
		for n, s := range states {
			if n == "" || s == "" {
				t.Fatalf("empty name or state from %q: %v", out, states)
			}
		}
	})
}

func FuzzParseReport(f *testing.F) {
	f.Add([]byte("REPORT_HOST=n2\x00RANK=5\x00"))
	f.Add([]byte("REPORT_HOST=n1\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseReport(b)
		if err != nil {
			return
		}
		// What parses writes back to records that parse the same.
		out := fmt.Appendf(nil, "%s=%s\x00", ReportHostKey, r.Host)
		for k, v := range r.Env {
			out = fmt.Appendf(out, "%s=%s\x00", k, v)
		}
		again, err := ParseReport(out)
		if err != nil || again.Host != r.Host || !maps.Equal(again.Env, r.Env) {
			t.Fatalf("round trip of %q: %+v, %v; want %+v", b, again, err, r)
		}
	})
}
