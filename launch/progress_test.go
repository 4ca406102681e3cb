package launch

import (
	"reflect"
	"testing"
)

func TestRunDirBases(t *testing.T) {
	for _, tc := range []struct {
		name, tmpdir, xdg string
		shm               bool
		want              []string
	}{
		{"TMPDIR set: the user's choice alone", "/scratch/job", "/run/user/1000", true, []string{"/scratch/job"}},
		{"a runtime directory, then shared memory", "", "/run/user/1000", true, []string{"/run/user/1000", "/dev/shm", ""}},
		{"shared memory", "", "", true, []string{"/dev/shm", ""}},
		{"no tmpfs: the system's temporary directory", "", "", false, []string{""}},
	} {
		if got := runDirBases(tc.tmpdir, tc.xdg, tc.shm); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
