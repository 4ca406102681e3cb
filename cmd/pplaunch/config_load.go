package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/alexflint/go-arg"
)

// withConfigFile re-reads the command line over train --config FILE: the
// flags' defaults, then the file, then the flags given (args, the launcher
// flags and subcommand as run parsed them). go-arg parses into the struct
// the file has filled with IgnoreDefault, so only the flags on the command
// line overwrite it.
func withConfigFile(c *cli, args []string) error {
	path := c.Train.Config
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	if b, err = configJSON(path, b); err != nil {
		return err
	}
	var d cli
	p, err := arg.NewParser(arg.Config{Program: "pplaunch", IgnoreEnv: true}, &d)
	if err != nil {
		return err
	}
	if err := p.Parse([]string{"train"}); err != nil {
		return err
	}
	train := d.Train
	if err := readConfigFile(train, path, b, givenFlags(args)); err != nil {
		return err
	}
	merged := *c
	merged.Train = train
	p, err = arg.NewParser(arg.Config{Program: "pplaunch", IgnoreDefault: true}, &merged)
	if err != nil {
		return err
	}
	if err := p.Parse(args); err != nil {
		return err
	}
	*c = merged
	return nil
}

// givenFlags is the set of long flags written on the command line (their
// names only: --microbatches=8 and --microbatches 8 both give
// "--microbatches").
func givenFlags(args []string) map[string]bool {
	out := map[string]bool{}
	for _, a := range args {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "--") {
			name, _, _ := strings.Cut(a, "=")
			out[name] = true
		}
	}
	return out
}

// readConfigFile sets c's options from the file's keys: DeepSpeed's
// (translated by runFile.apply), then the options' own names, which may not
// repeat a DeepSpeed key of the same meaning. given says which flags the
// command line gave (they are applied after, and win).
func readConfigFile(c *trainCmd, name string, b []byte, given map[string]bool) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(bytes.TrimSpace(b), &obj); err != nil || obj == nil {
		return fmt.Errorf("%s: not a JSON object: %v", name, err)
	}
	opts := trainOptions(c)
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
			return fmt.Errorf("%s: %s is not supported: %s", name, k, unsupportedKeys[k])
		case len(prefixed(opts, k)) > 0:
			return fmt.Errorf("%s: unknown key %s: give its settings as the flags' names (%s)", name, k, strings.Join(prefixed(opts, k), ", "))
		default:
			return fmt.Errorf("%s: unknown key %s (did you mean %s?)", name, k, suggestKey(k, opts, dsKeys))
		}
	}
	dsText, _ := json.Marshal(ds)
	f, err := parseRunFile(name, dsText)
	if err != nil {
		return err
	}
	if err := f.apply(c, name, given); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(own)) {
		o, _ := byKey(opts, k)
		if raw, ok := lookupPath(obj, o.DS); ok {
			return fmt.Errorf("%s: %s %s and %s %s: give one", name, k, own[k], o.DS, raw)
		}
		if err := o.set(name, k, own[k]); err != nil {
			return err
		}
		switch o.Key {
		case "microbatch_size":
			c.batch.Micro = true
		case "microbatches":
			c.batch.Accum = true
		}
	}
	return nil
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
func prefixed(opts []option, group string) []string {
	var out []string
	for _, o := range opts {
		if strings.HasPrefix(o.Key, fileKey(group)+"_") {
			out = append(out, o.Key)
		}
	}
	return out
}
