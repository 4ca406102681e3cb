package store

// MaxHandshakes bounds the connections a listener (the store, a rank's link
// listener) holds before they have proved the job's token. Past it the
// listener accepts no more until a handshake ends: further peers wait in the
// kernel's accept queue, where they cost the process nothing, and each
// handshake ends within HandshakeTimeout, so real peers get their turn.
const MaxHandshakes = 32

// Gate bounds how many handshakes a listener runs at once: take a slot
// before Accept, give it back when the handshake ends.
type Gate struct{ slots chan struct{} }

// NewGate returns a gate of n slots.
func NewGate(n int) *Gate { return &Gate{slots: make(chan struct{}, n)} }

// Enter takes a slot, waiting while every one is held. It returns false,
// taking none, once done is closed.
func (g *Gate) Enter(done <-chan struct{}) bool {
	select {
	case <-done:
		return false
	default:
	}
	select {
	case g.slots <- struct{}{}:
		return true
	case <-done:
		return false
	}
}

// Leave gives back a slot taken by Enter.
func (g *Gate) Leave() { <-g.slots }

// Limit is the number of slots.
func (g *Gate) Limit() int { return cap(g.slots) }
