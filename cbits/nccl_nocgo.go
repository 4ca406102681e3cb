//go:build !cgo

package cbits

func (n *NCCLLib) UniqueID() (NCCLUniqueID, error) { return NCCLUniqueID{}, errNoCgo }
func (n *NCCLLib) CommInitRank(nranks int, id NCCLUniqueID, rank int, blocking bool) (NCCLComm, error) {
	return 0, errNoCgo
}
func (n *NCCLLib) CommSplit(comm NCCLComm, color, key int, blocking bool) (NCCLComm, error) {
	return 0, errNoCgo
}
func (n *NCCLLib) Send(buf DevPtr, count int, dtype NCCLDataType, peer int, comm NCCLComm, s Stream) error {
	return errNoCgo
}
func (n *NCCLLib) Recv(buf DevPtr, count int, dtype NCCLDataType, peer int, comm NCCLComm, s Stream) error {
	return errNoCgo
}
func (n *NCCLLib) AllReduce(send, recv DevPtr, count int, dtype NCCLDataType, op NCCLRedOp, comm NCCLComm, s Stream) error {
	return errNoCgo
}
func (n *NCCLLib) Broadcast(send, recv DevPtr, count int, dtype NCCLDataType, root int, comm NCCLComm, s Stream) error {
	return errNoCgo
}
func (n *NCCLLib) GroupStart() error                     { return errNoCgo }
func (n *NCCLLib) GroupEnd() error                       { return errNoCgo }
func (n *NCCLLib) CommGetAsyncError(comm NCCLComm) error { return errNoCgo }
func (n *NCCLLib) CommAbort(comm NCCLComm) error         { return errNoCgo }
func (n *NCCLLib) CommDestroy(comm NCCLComm) error       { return errNoCgo }
func (n *NCCLLib) ErrorString(code int) string           { return "" }
