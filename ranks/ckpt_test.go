package ranks

import (
	"errors"
	"testing"
)

// Rank 0's error for a damaged chosen checkpoint names it, says why, and says
// how to go on: with the one before it where there is one.
func TestDamagedCheckpointError(t *testing.T) {
	why := errors.New("manifest.json: invalid character")
	for _, tc := range []struct {
		steps []int
		step  int
		want  string
	}{
		{[]int{2, 4, 6}, 6, "resume: the newest complete checkpoint /ck/step-000006 is damaged: manifest.json: invalid character; move it out of /ck (or delete it) to resume from step-000004, the one before it"},
		{[]int{6}, 6, "resume: the newest complete checkpoint /ck/step-000006 is damaged: manifest.json: invalid character; move it out of /ck (or delete it) to start from step 0"},
	} {
		err := damaged("/ck", tc.steps, tc.step, why)
		if err.Error() != tc.want {
			t.Errorf("damaged(%v, %d):\n got %s\nwant %s", tc.steps, tc.step, err, tc.want)
		}
		if !errors.Is(err, why) {
			t.Errorf("damaged(%v, %d) does not wrap the reason", tc.steps, tc.step)
		}
	}
}
