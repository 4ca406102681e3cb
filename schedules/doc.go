// Package schedules holds pipeline schedules as data: the action IR, its text
// form and PyTorch's pipeline-order CSV (csv.go), generators (GPipe, 1F1B,
// interleaved, zero-bubble ZB-H1 and ZB-V, the controllable-memory V-Half
// and V-Min in vshape.go, DualPipeV in dualpipev.go), the validator and the
// simulator. It is pure: the standard library and svgdraw only, no effects.
//
// A Schedule gives every rank an ordered list of Actions (kind, virtual stage,
// micro-batch). Generate builds a named schedule with its transfers; Lower adds
// the transfers to a compute-only one (as users may write with Parse's text
// form). Validate checks a schedule, including a dry run with rendezvous
// transfers, so that a validated schedule run in list order cannot deadlock;
// Schedule.Peer and Action.Matching tell an executor whom each transfer talks
// to and what the peer does.
//
// Simulate turns a schedule and Costs into a Timeline; an executor fills the same
// Timeline type from measured timestamps. Analyze gives makespan, idle time,
// bubble fraction and peak live activations of either; MeanCosts and Predict
// re-simulate with measured per-stage durations; PeakBytes gives the peak
// activation bytes as an executor measures them; WriteGantt, WriteSVG (and
// WriteSVGWith: a window of steps from Window, their boundaries, the
// expected timeline and the actions Late marks) and WriteTrace (with flow
// arrows from each send to its receive) draw any Timeline. Load reads a schedule file and Fit checks it against a run.
//
// It must never import another package of pplaunch but svgdraw (the
// drawing primitives its pictures share with bench's charts), nor anything
// with effects: plan, the simulator and the executor all rely on it being
// pure.
package schedules
