// Package hostlist expands Slurm's compressed host lists ("n[01-04,07],gpu-a[1-2]")
// and task counts ("2(x3),1"). It is pure: strings in, slices out, no effects.
//
// It must never import another package of pplaunch.
package hostlist
