package live

import (
	"embed"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

//go:embed page
var page embed.FS

// Handler serves the view of b: the page at "/", the state as JSON at
// "/api/state", and as server-sent events at "/api/events" (one event a
// second and at every step; the last one has run.ended set, and the stream
// then ends). It answers GET and HEAD only: the view is read-only.
func Handler(b *Board) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		body, _ := page.ReadFile("page/index.html")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(body)
	})
	mux.HandleFunc("GET /api/state", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(b.Snapshot(time.Now()))
	})
	mux.HandleFunc("GET /api/events", func(w http.ResponseWriter, r *http.Request) { events(w, r, b) })
	return mux
}

// events streams the state until the run is done or the client leaves.
func events(w http.ResponseWriter, r *http.Request, b *Board) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported here", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		changed := b.Changed()
		st := b.Snapshot(time.Now())
		body, err := json.Marshal(st)
		if err != nil {
			return
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", body); err != nil {
			return
		}
		fl.Flush()
		if st.Run.Ended {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-changed:
		case <-tick.C:
		}
	}
}
