// Package report is what a training run tells its user, all of it from rank
// 0: the console's lines (the start line, a line or a progress bar a step,
// the re-layouts, the samples, the summary and the files written), the
// --metrics JSON lines, the --trace file streamed step by step and the
// --trace-svg picture drawn from it, the Prometheus endpoint and live view of
// --metrics-addr (with the curve kept for a restarted group), and the
// --profile file.
//
// A Run owns that state. pplaunch train builds one from its flags (Open),
// hands it the records the stage loop reports (Step, Event, Relayout,
// Sample), and ends it with Finish, or Close after a failure. Track makes
// every rank publish the action it is in for the live view's rows.
//
// It imports ranks (the records), ranks/live (the view it serves),
// schedules (the trace and its picture), plan (the profile) and contract
// (the agent's environment). Nothing imports it but cmd/pplaunch: the stage
// loop reports through ranks.Job's callbacks and knows nothing of consoles
// or files.
package report
