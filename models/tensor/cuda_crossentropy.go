package tensor

import "unsafe"

// CrossEntropy writes the softmax of each row over its first valid columns
// (0: all; the padding columns get probability 0) and returns the mean over
// rows of -log p[target]: the per-row losses, in float64 with the softmax
// denominator summed in float64, are added on the device in an order fixed
// by the row count, and the sum alone comes to the host.
func (c *CUDA) CrossEntropy(probs, logits *Tensor, targets []int32, valid int) float64 {
	n, V, valid := crossEntropyDims(probs, logits, targets, valid)
	if n == 0 {
		return 0
	}
	ids := c.uploadInts("cross entropy", targets)
	loss := c.tmp(2*n + 2) // doubles: the rows', then their sum
	sum := loss.ptr + devPtr(n)*8
	c.launch("crossentropy_forward", rowGrid(n), blk(rowBlock), 0, c.ptrAny("cross entropy", probs), loss.ptr,
		c.ptrAny("cross entropy", logits), ids.ptr, int32(n), int32(V), int32(valid), dtBits(probs, logits))
	c.launch("sum_f64", blk(1), blk(elemBlock), 0, sum, loss.ptr, int32(n))
	var total float64
	c.download(unsafe.Pointer(&total), sum, 8)
	c.alloc.put(ids)
	c.alloc.put(loss)
	return total / float64(n)
}

// CrossEntropyBackward computes dlogits = scale·(p - onehot(target))/N.
func (c *CUDA) CrossEntropyBackward(dlogits, probs *Tensor, targets []int32, scale float32) {
	const op = "cross entropy backward"
	n, V := crossEntropyBackwardDims(dlogits, probs, targets)
	if n == 0 {
		return
	}
	ids := c.uploadInts(op, targets)
	grid := [3]uint32{uint32(n), uint32(min((V+elemBlock*rowChunk-1)/(elemBlock*rowChunk), 64)), 1}
	c.launch("crossentropy_backward", grid, blk(elemBlock), 0, c.ptrAny(op, dlogits), c.ptrAny(op, probs), ids.ptr, int32(V), scale/float32(n),
		dtBits(dlogits, probs))
	c.alloc.put(ids)
}
