package schedules

import (
	"reflect"
	"testing"
)

// FuzzParse checks that the parser never panics, that whatever it accepts
// prints and parses back to the same schedule, and that Validate, Lower and
// Simulate return (an error or a result) on it without panicking. Seeds are
// in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add("0F0, 0B0")
	f.Add(naive1F1B)
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse(text)
		if err != nil {
			return
		}
		back, err := Parse(Format(s))
		if err != nil {
			t.Fatalf("parse of format: %v\n%s", err, Format(s))
		}
		if !reflect.DeepEqual(back, s) && allRanksMentionTheirStages(s) {
			t.Fatalf("round trip changed the schedule:\n%q\n%+v\n%+v", text, s, back)
		}
		if Format(back) != Format(s) {
			t.Fatalf("format is not stable")
		}
		if s.Stages() > 64 || s.M > 64 {
			return // keep each run fast; ranges are checked by Parse
		}
		if err := Validate(s); err == nil {
			if _, err := Simulate(s, unit); err != nil {
				t.Fatalf("valid schedule does not simulate: %v", err)
			}
		}
		if !s.HasTransfers() {
			if l, err := Lower(s); err == nil {
				if err := Validate(l); err != nil {
					t.Fatalf("lowered schedule invalid: %v", err)
				}
			}
		}
	})
}

// allRanksMentionTheirStages reports whether Parse's placement inference
// sees the same thing again after Format, which holds unless a stage appears
// on several ranks (then the first one wins both times anyway).
func allRanksMentionTheirStages(s *Schedule) bool {
	for _, r := range s.Placement {
		if r < 0 {
			return false
		}
	}
	return true
}
