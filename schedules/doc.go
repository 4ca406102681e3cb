// Package schedules holds pipeline schedules as data: the action IR and its text
// form, generators (GPipe, 1F1B, interleaved, zero-bubble), the validator and the
// simulator. It is pure: standard library only, no effects.
package schedules
