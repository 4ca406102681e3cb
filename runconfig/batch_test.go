package runconfig

import "testing"

func TestResolveBatch(t *testing.T) {
	for _, tc := range []struct {
		spec Batch
		cur  BatchSizes
		want BatchSizes
		err  bool
	}{
		{Batch{}, BatchSizes{4, 8, 1}, BatchSizes{4, 8, 1}, false},
		{Batch{Total: 32, Micro: true}, BatchSizes{4, 8, 2}, BatchSizes{4, 4, 2}, false},
		{Batch{Total: 32, Accum: true}, BatchSizes{4, 2, 2}, BatchSizes{8, 2, 2}, false},
		{Batch{Total: 64}, BatchSizes{4, 8, 1}, BatchSizes{8, 8, 1}, false},
		{Batch{Total: 32, Micro: true, Accum: true}, BatchSizes{4, 4, 2}, BatchSizes{4, 4, 2}, false},
		{Batch{Total: 33, Micro: true, Accum: true}, BatchSizes{4, 4, 2}, BatchSizes{}, true},
		{Batch{Total: 33, Micro: true, Accum: true, MicroFlag: true}, BatchSizes{4, 4, 2}, BatchSizes{}, true},
		{Batch{Total: 33, Micro: true, Accum: true, MicroFlag: true, AccumFlag: true}, BatchSizes{4, 4, 2}, BatchSizes{4, 4, 2}, false}, // the flags win
		{Batch{Total: 6, Micro: true}, BatchSizes{4, 8, 1}, BatchSizes{}, true},
	} {
		got, err := ResolveBatch(tc.spec, tc.cur)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("ResolveBatch(%+v, %+v) = %+v, %v; want %+v (error %v)", tc.spec, tc.cur, got, err, tc.want, tc.err)
		}
	}
}
