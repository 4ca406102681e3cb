package runconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Option is one row of an option table, bound to a struct field. The
// field's go-arg tags give the flag, its environment variable (env:),
// default and help; two more tags give the rest:
//
//	ds:"optimizer.params.lr"  the DeepSpeed (or Megatron) key of the same meaning;
//	                          a file may not give both
//	alias:"learning_rate"     other tools' names for it: a config file key so named is
//	                          answered with the option's own name (and its DeepSpeed key)
//	same:"true"               every rank must be given the same value: rank 0 publishes
//	                          it and the others refuse to start on a difference (Agreed)
type Option struct {
	Flag  string   // "--min-lr"
	Key   string   // "min_lr": the config file key (and "min-lr")
	Env   string   // environment variable, if any
	DS    string   // DeepSpeed key of the same meaning, if any
	Alias []string // other tools' names, for suggestions
	Help  string
	Def   string // go-arg's default tag ("" when none)
	Same  bool   // every rank must be given the same value
	value reflect.Value
}

// Options is the option table of the struct v points to, bound to its
// fields in declaration order (embedded structs' fields in place). Fields
// without a long flag, and --config itself, are not options.
func Options(v any) []Option {
	var out []Option
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(v.Field(i))
				continue
			}
			o, ok := newOption(f)
			if !ok || !f.IsExported() || o.Key == "config" {
				continue
			}
			o.value = v.Field(i)
			out = append(out, o)
		}
	}
	walk(reflect.ValueOf(v).Elem())
	return out
}

// newOption reads one field's tags (ok false: the field is not a flag).
func newOption(f reflect.StructField) (Option, bool) {
	o := Option{Help: f.Tag.Get("help"), DS: f.Tag.Get("ds"), Def: f.Tag.Get("default"), Same: f.Tag.Get("same") == "true"}
	for _, part := range strings.Split(f.Tag.Get("arg"), ",") {
		switch {
		case strings.HasPrefix(part, "--"):
			o.Flag = part
		case strings.HasPrefix(part, "env:"):
			o.Env = strings.TrimPrefix(part, "env:")
		}
	}
	if a := f.Tag.Get("alias"); a != "" {
		o.Alias = strings.Split(a, ",")
	}
	o.Key = strings.ReplaceAll(strings.TrimPrefix(o.Flag, "--"), "-", "_")
	return o, o.Flag != ""
}

// fileKey normalises a config file key to the table's spelling
// ("microbatch-size" → "microbatch_size").
func fileKey(k string) string { return strings.ReplaceAll(k, "-", "_") }

// byKey finds the option a config file key names.
func byKey(opts []Option, k string) (Option, bool) {
	k = fileKey(k)
	for _, o := range opts {
		if o.Key == k {
			return o, true
		}
	}
	return Option{}, false
}

// set decodes a config file value into the option's field, naming the key
// and what it takes when the value does not fit.
func (o Option) set(file, key string, raw json.RawMessage) error {
	dst := reflect.New(o.value.Type())
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(dst.Interface()); err != nil || dec.More() {
		return fmt.Errorf("%s: %s: %s, want %s", file, key, raw, KindName(o.value.Type()))
	}
	o.value.Set(dst.Elem())
	return nil
}

// Effective is the whole run as a config file: every option under its
// flag's name, in the table's order, with the value it holds. Read back
// it is the same run; train prints it at the start (`config:`) and saves it
// in every checkpoint's manifest.
func Effective(opts []Option) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, o := range opts {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(o.Key)
		v, err := json.Marshal(o.value.Interface())
		if err != nil {
			panic(fmt.Sprintf("option %s: %v", o.Flag, err)) // a field type json cannot write: a bug in the table
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes()
}
