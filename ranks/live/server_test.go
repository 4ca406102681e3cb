package live

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pplaunch/pplaunch/ranks"
)

// The server answers the page, the state and the event stream; it takes no
// writes, and its stream ends with the final state.
func TestHandler(t *testing.T) {
	b := NewBoard(Run{Title: "a run", World: 2, PP: 2, DP: 1, Steps: 3}, nil)
	srv := httptest.NewServer(Handler(b))
	defer srv.Close()

	get := func(path string) (*http.Response, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	resp, body := get("/")
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, `new EventSource("api/events")`) {
		t.Errorf("page: %s %q, %d bytes", resp.Status, resp.Header.Get("Content-Type"), len(body))
	}
	if resp, _ := get("/nosuch"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/nosuch: %s, want 404", resp.Status)
	}
	b.Observe(ranks.StepRecord{Step: 1, Loss: 5.5, RSS: []int64{1 << 20, 2 << 20}})
	resp, body = get("/api/state")
	var st State
	if err := json.Unmarshal([]byte(body), &st); err != nil || resp.StatusCode != 200 || len(st.Series) != 1 || st.Series[0].Loss != 5.5 || len(st.Ranks) != 2 || st.Ranks[1].RSS != 2<<20 {
		t.Errorf("state: %s %v %+v", resp.Status, err, st)
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		req, _ := http.NewRequest(m, srv.URL+"/api/state", strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s /api/state: %s, want 405 (read-only)", m, resp.Status)
		}
	}

	// The stream: the state now, another at the next step, the final one,
	// then the end.
	resp, err := http.Get(srv.URL + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("events: content type %q", ct)
	}
	events := make(chan State)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var s State
				if json.Unmarshal([]byte(data), &s) == nil {
					events <- s
				}
			}
		}
	}()
	next := func() State {
		t.Helper()
		select {
		case s, ok := <-events:
			if !ok {
				t.Fatal("the stream ended early")
			}
			return s
		case <-time.After(time.Minute): // a hang guard, not a measurement
			t.Fatal("no event")
		}
		return State{}
	}
	if s := next(); len(s.Series) != 1 {
		t.Errorf("first event: %d points, want 1", len(s.Series))
	}
	b.Observe(ranks.StepRecord{Step: 2, Loss: 5.0})
	for s := next(); len(s.Series) != 2; s = next() {
	}
	b.End("failed", false)
	for s := next(); !s.Run.Ended; s = next() {
	}
	if _, ok := <-events; ok {
		t.Error("the stream goes on after the final state")
	}
}
