package runconfig

import (
	"fmt"
	"strconv"

	"github.com/pplaunch/pplaunch/ranks"
)

// Agreed lists the options every rank must be given alike (the table's
// same:"true" tags) with the values they hold, each as the flag would be
// written: what ranks.TrainConfig.Agreed carries for the ranks to compare.
func Agreed(opts []Option) []ranks.FlagValue {
	var out []ranks.FlagValue
	for _, o := range opts {
		if !o.Same {
			continue
		}
		v := o.value.Interface()
		s := fmt.Sprint(v)
		if f, ok := v.(float64); ok {
			s = strconv.FormatFloat(f, 'g', -1, 64)
		}
		out = append(out, ranks.FlagValue{Flag: o.Flag, Value: s})
	}
	return out
}
