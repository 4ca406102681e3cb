package runconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Read sets the options of opts from a config file's text b (JSON, or YAML
// where name ends in .yaml or .yml): DeepSpeed's keys (translated by
// runFile.apply), then the options' own names, which may not repeat a
// DeepSpeed key of the same meaning. given says which flags the command
// line gave (they are applied after, and win). It returns what the file
// and the flags gave of the batch sizes, for ResolveBatch once the world
// is known.
func Read(opts []Option, name string, b []byte, given map[string]bool) (Batch, error) {
	b, err := toJSON(name, b)
	if err != nil {
		return Batch{}, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(bytes.TrimSpace(b), &obj); err != nil || obj == nil {
		return Batch{}, fmt.Errorf("%s: not a JSON object: %v", name, err)
	}
	ds, own := map[string]json.RawMessage{}, map[string]json.RawMessage{}
	dsKeys := runFileKeys()
	keys := slices.Sorted(maps.Keys(obj)) // the first problem reported is the same every time
	for _, k := range keys {
		isDS := slices.Contains(dsKeys, k)
		switch _, isOpt := byKey(opts, k); {
		case isOpt && !(isDS && bytes.HasPrefix(bytes.TrimSpace(obj[k]), []byte("{"))):
			own[k] = obj[k] // "optimizer": "sgd" is the flag's; "optimizer": {...} DeepSpeed's
		case isDS:
			ds[k] = obj[k]
		case unsupportedKeys[k] != "":
			return Batch{}, fmt.Errorf("%s: %s is not supported: %s", name, k, unsupportedKeys[k])
		case len(prefixed(opts, k)) > 0:
			return Batch{}, fmt.Errorf("%s: unknown key %s: give its settings as the flags' names (%s)", name, k, strings.Join(prefixed(opts, k), ", "))
		default:
			return Batch{}, fmt.Errorf("%s: unknown key %s (did you mean %s?)", name, k, suggestKey(k, opts, dsKeys))
		}
	}
	dsText, _ := json.Marshal(ds)
	f, err := parseRunFile(name, dsText)
	if err != nil {
		return Batch{}, err
	}
	batch, err := f.apply(newTable(opts), opts, ds, name, given)
	if err != nil {
		return batch, err
	}
	for _, k := range slices.Sorted(maps.Keys(own)) {
		o, _ := byKey(opts, k)
		if raw, ok := lookupPath(obj, o.DS); ok {
			return batch, fmt.Errorf("%s: %s %s and %s %s: give one", name, k, own[k], o.DS, raw)
		}
		if err := o.set(name, k, own[k]); err != nil {
			return batch, err
		}
		switch o.Key {
		case "microbatch_size":
			batch.Micro = true
		case "microbatches":
			batch.Accum = true
		}
	}
	return batch, nil
}

// lookupPath finds a dotted key (pipeline.num_stages) in a decoded object.
func lookupPath(obj map[string]json.RawMessage, path string) (json.RawMessage, bool) {
	if path == "" {
		return nil, false
	}
	head, rest, nested := strings.Cut(path, ".")
	raw, ok := obj[head]
	if !ok || !nested {
		return raw, ok
	}
	var inner map[string]json.RawMessage
	if json.Unmarshal(raw, &inner) != nil {
		return nil, false
	}
	return lookupPath(inner, rest)
}

// prefixed lists the options named group_*: what an unknown key "group" (an
// object such as "eval": {"every": 5}) is spelt as here.
func prefixed(opts []Option, group string) []string {
	var out []string
	for _, o := range opts {
		if strings.HasPrefix(o.Key, fileKey(group)+"_") {
			out = append(out, o.Key)
		}
	}
	return out
}
