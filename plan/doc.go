// Package plan is the layout planner: pure functions from measured or given
// costs to predicted steps, with no process, socket or device of its own.
//
// A Profile (profile.go) is what `train --profile` measures: the costs of
// one model on one machine per model unit and stage boundary; the trainer
// writes it, plan, bench and --balance profile:FILE read it. ProfileCut
// (cut.go) is the cut into stages that balances a profile's block times;
// CompareCuts sets it beside the measured one.
// Predict (predict.go) simulates any layout with a profile's costs: the
// step time and each rank's memory. Space and Search (search.go) list the
// pp × dp layouts of a world and rank their predictions against a memory
// budget, with a verdict for each (verdict.go). Simulate (simulate.go) is
// `plan`'s view of one schedule under given per-rank costs, with the closed
// forms the papers give for its bubble and peak (forms.go). The rules a
// layout must keep to be bit-exact and allowed (rules.go) are here too, so
// the trainer's check and the search agree. report.go prints each answer
// as pplaunch plan shows it. A Query (query.go) is what pplaunch plan is
// asked: its flags, declared once with their tags and checked here, and
// the answers to them (answer.go, answer_profile.go: the simulation of a
// built-in or a file's schedule, the comparison, the cut comparison and
// search of a profile, as text or JSON); Files (files.go) renders the
// files a query asks for (CSV, SVG, trace) for the caller to write. The
// caller reads and writes the files; nothing here opens one. CutModel
// (cut.go) is --balance profile:FILE's cut, refusing another model's profile.
//
// plan imports schedules (generators, simulator) and models (the cost
// partition) only: never ranks, collective, launch, bench or cmd, so the
// trainer below the command line can cut by a profile and check a layout
// with the planner's own rules.
package plan
