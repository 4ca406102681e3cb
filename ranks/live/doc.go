// Package live is the view of a running job that rank 0 serves beside its
// Prometheus metrics (train --metrics-addr): a page at "/" and its JSON at
// "/api/state" (and as server-sent events at "/api/events"), read by people in
// a browser and by `pplaunch top` in a terminal.
//
// Every rank keeps the action it is in (Tracker, a hook before each action of
// the stage loop) and publishes it to the job's store once a second; rank 0's
// Board gathers those, and the step records, into one State. Whether a rank
// is stuck or silent is a pure decision (Classify) over the reports and the
// clock, table-tested without processes. StateURL and FetchState
// (client.go) are the reading side of "/api/state", pplaunch top's.
//
// The view is read-only and holds nothing secret: no token, no environment,
// only what the console already prints. It imports ranks (the step records),
// store and schedules; nothing in ranks imports it.
package live
