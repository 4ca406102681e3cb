package keeper

import (
	"reflect"
	"testing"
)

func TestLocalRankOf(t *testing.T) {
	for _, tc := range []struct {
		env   string
		local int
		ok    bool
	}{
		{"PATH=/bin\x00LOCAL_RANK=3\x00RANK=11\x00", 3, true},
		{"LOCAL_RANK=0", 0, true},
		{"PATH=/bin\x00RANK=1\x00", 0, false}, // a cleared environment: no owner
		{"LOCAL_RANK=x\x00", 0, false},
		{"", 0, false},
	} {
		l, ok := localRankOf([]byte(tc.env))
		if l != tc.local || ok != tc.ok {
			t.Errorf("localRankOf(%q) = %d, %v; want %d, %v", tc.env, l, ok, tc.local, tc.ok)
		}
	}
}

func TestDoomed(t *testing.T) {
	owners := map[int]int{100: 0, 101: 1, 200: 0, 201: 1} // pid: local rank; 300 names none
	owner := func(pid int) (int, bool) { l, ok := owners[pid]; return l, ok }
	kids := []int{100, 101, 200, 201, 300}
	running := map[int]bool{100: true, 101: true} // the ranks' own processes
	for _, tc := range []struct {
		name  string
		ended map[int]bool
		all   bool
		want  []int
	}{
		{"nothing ended", map[int]bool{}, false, nil},
		{"rank 0 ended: its orphan", map[int]bool{0: true}, false, []int{200}},
		{"both ended", map[int]bool{0: true, 1: true}, false, []int{200, 201}},
		{"the agent is gone: all but the running ranks (killed by group)", map[int]bool{}, true, []int{200, 201, 300}},
	} {
		if got := doomed(kids, running, tc.ended, owner, tc.all); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: doomed %v, want %v", tc.name, got, tc.want)
		}
	}
}
