package runconfig

import (
	"fmt"
	"reflect"
)

// table is an option table by key: what the DeepSpeed translation sets and
// reads the options through, so that it names the options as the config
// file does and knows nothing of the struct that holds them.
type table map[string]Option

func newTable(opts []Option) table {
	t := table{}
	for _, o := range opts {
		t[o.Key] = o
	}
	return t
}

// must is the option of key; a key the table does not have is a bug in
// the translation (CheckTable finds it), not in a file.
func (t table) must(key string) Option {
	o, ok := t[key]
	if !ok {
		panic(fmt.Sprintf("runconfig: the option table has no %s", key))
	}
	return o
}

// set sets option key to v, converted to the option's type.
func (t table) set(key string, v any) {
	o := t.must(key)
	o.value.Set(reflect.ValueOf(v).Convert(o.value.Type()))
}

// float is option key's value as a number.
func (t table) float(key string) float64 {
	return t.must(key).value.Convert(reflect.TypeFor[float64]()).Float()
}
