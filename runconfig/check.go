package runconfig

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// CheckTable checks an option table against the translation: every ds:
// tag names a key of DeepSpeed's schema (runFile), of the option's kind
// where the key sets the option as it is, and every option the hand
// translation sets is in the table. It reads files that give every
// translated key into opts' fields, so give it a table of its own.
func CheckTable(opts []Option) error {
	leaves := map[string]reflect.Type{}
	schemaLeaves("", reflect.TypeFor[runFile](), leaves)
	for _, o := range opts {
		if o.DS == "" {
			continue
		}
		t, ok := leaves[o.DS]
		if !ok {
			return fmt.Errorf("option %s: ds:%q is not a DeepSpeed key this reads (the schema's are %s)", o.Flag, o.DS, strings.Join(slices.Sorted(maps.Keys(leaves)), ", "))
		}
		if !slices.Contains(translated, o.DS) && t.Kind() != o.value.Kind() {
			return fmt.Errorf("option %s: ds:%q holds %s, the option %s: translate it in deepspeed.go", o.Flag, o.DS, KindName(t), KindName(o.value.Type()))
		}
	}
	for _, file := range []string{
		`{"pipeline": {"num_stages": 2, "partition_method": "uniform", "activation_checkpoint_interval": 1},
		  "optimizer": {"type": "AdamW", "params": {"lr": 0.1}}, "zero_optimization": {"stage": 1},
		  "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 10}}}`,
		`{"pipeline": {"enabled": false}, "optimizer": {"type": "SGD", "params": {"lr": 0.1, "momentum": 0.5}},
		  "scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 10}}}`,
	} {
		if err := readCatching(opts, file); err != nil {
			return err
		}
	}
	return nil
}

// readCatching reads file into opts, turning a translation that names an
// option the table lacks (table.must's panic) into an error.
func readCatching(opts []Option, file string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	_, err = Read(opts, "check.json", []byte(file), nil)
	return err
}

// schemaLeaves adds the dotted keys of t's leaves (DeepSpeed's values) and
// their types to out.
func schemaLeaves(path string, t reflect.Type, out map[string]reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		out[path] = t
		return
	}
	for i := range t.NumField() {
		k, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		schemaLeaves(join(path, k), t.Field(i).Type, out)
	}
}
