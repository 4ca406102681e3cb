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

// OpError is the failure of one send or receive: Op names it ("recv
// collective call=3 phase=0 step=0 segment=0 from rank 1"), Peer is the world
// rank on the other end, so that a caller can tell whom a timed-out wait was
// waiting on in an all-reduce or any other call that hides its pieces (the
// launcher names a rank that every other waits on as the silent one).
type OpError struct {
	Peer int // world rank
	Op   string
	Err  error
}

func (e *OpError) Error() string { return e.Op + ": " + e.Err.Error() }
func (e *OpError) Unwrap() error { return e.Err }
