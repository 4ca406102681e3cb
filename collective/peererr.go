package collective

// PeerError is a failure that concerns one other rank: a wait for it to
// connect, to publish its address, or to answer, that did not end in time.
// Its text is Err's (which names the rank); Peer says which rank it is, for
// a caller that must know whom this rank was waiting on (the launcher names a
// rank that never came as the silent one, not the rank that waited).
type PeerError struct {
	Peer int // world rank
	Err  error
}

func (e *PeerError) Error() string { return e.Err.Error() }
func (e *PeerError) Unwrap() error { return e.Err }
