// Package schedules holds pipeline schedules as data: the action IR and its text
// form, generators (GPipe, 1F1B, interleaved, zero-bubble), the validator and the
// simulator. It is pure: standard library only, no effects.
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
// re-simulate with measured per-stage durations; WriteGantt, WriteSVG and
// WriteTrace draw any Timeline.
//
// It must never import another package of pplaunch, nor anything with
// effects: plan, the simulator and the executor all rely on it being pure.
package schedules
