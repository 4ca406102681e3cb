package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// The training options are declared once: as the fields of trainCmd and of
// the flag structs it embeds (modelFlags, cutFlags, optimFlags, sampleFlags,
// metricsFlags). Each field is one row of the table. go-arg's tags give the
// flag, its environment variable (env:), default and help; two more tags
// give the rest:
//
//	ds:"optimizer.params.lr"  the DeepSpeed (or Megatron) key of the same meaning,
//	                          which config_apply.go translates; a file may not give both
//	alias:"learning_rate"     other tools' names for it: a config file key so named is
//	                          answered with the option's own name (and its DeepSpeed key)
//
// From the table come the flags (go-arg), the config file's keys (each flag's
// name, with underscores or dashes), the printed `config:` line and the
// checkpoint manifest's copy of it (effectiveConfig), and the docs' option
// tables (a test compares them). The values' checks are ranks.TrainConfig's
// (Plan), which every rank runs, with or without an agent.
//
// A new option is one field with its tags; nothing else needs to know of it
// unless it has a DeepSpeed key, whose meaning config_apply.go translates.

// option is one row of the table, bound to a trainCmd's field.
type option struct {
	Flag  string   // "--min-lr"
	Key   string   // "min_lr": the config file key (and "min-lr")
	Env   string   // environment variable, if any
	DS    string   // DeepSpeed key of the same meaning, if any
	Alias []string // other tools' names, for suggestions
	Help  string
	Def   string // go-arg's default tag ("" when none)
	value reflect.Value
}

// trainOptions is the option table bound to c's fields, in declaration
// order. --config itself is not an option of the file.
func trainOptions(c *trainCmd) []option {
	var out []option
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
	walk(reflect.ValueOf(c).Elem())
	return out
}

// newOption reads one field's tags (ok false: the field is not a flag).
func newOption(f reflect.StructField) (option, bool) {
	o := option{Help: f.Tag.Get("help"), DS: f.Tag.Get("ds"), Def: f.Tag.Get("default")}
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
func byKey(opts []option, k string) (option, bool) {
	k = fileKey(k)
	for _, o := range opts {
		if o.Key == k {
			return o, true
		}
	}
	return option{}, false
}

// set decodes a config file value into the option's field, naming the key
// and what it takes when the value does not fit.
func (o option) set(file, key string, raw json.RawMessage) error {
	dst := reflect.New(o.value.Type())
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(dst.Interface()); err != nil || dec.More() {
		return fmt.Errorf("%s: %s: %s, want %s", file, key, raw, kindName(o.value.Type()))
	}
	o.value.Set(dst.Elem())
	return nil
}

// effectiveConfig is the whole run as a config file: every option under its
// flag's name, in the table's order, with the value this run uses. Read back
// with --config it is the same run; it is printed at the start (`config:`)
// and saved in every checkpoint's manifest.
func effectiveConfig(c *trainCmd) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, o := range trainOptions(c) {
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

// suggestKey answers an unknown top-level config file key: by meaning first
// (another tool's name for an option, or the last part of the DeepSpeed key
// of one), then by spelling among the options' names and DeepSpeed's keys.
func suggestKey(k string, opts []option, dsKeys []string) string {
	name := fileKey(k)
	say := func(o option) string {
		if o.DS != "" {
			return fmt.Sprintf("%s (DeepSpeed: %s)", o.Key, o.DS)
		}
		return o.Key
	}
	for _, o := range opts {
		leaf := o.DS[strings.LastIndex(o.DS, ".")+1:]
		if (o.DS != "" && leaf == name) || slices.Contains(o.Alias, name) {
			return say(o)
		}
	}
	best, bestD, bestOpt := "", -1, option{}
	for _, o := range opts {
		if d := editDistance(name, o.Key); bestD < 0 || d < bestD {
			best, bestD, bestOpt = o.Key, d, o
		}
	}
	for _, ds := range dsKeys {
		if d := editDistance(name, ds); d < bestD {
			best, bestD, bestOpt = ds, d, option{}
		}
	}
	if bestOpt.Key != "" {
		return say(bestOpt)
	}
	return best
}
