package runconfig

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// suggestKey answers an unknown top-level config file key: by meaning first
// (another tool's name for an option, or the last part of the DeepSpeed key
// of one), then by spelling among the options' names and DeepSpeed's keys.
func suggestKey(k string, opts []Option, dsKeys []string) string {
	name := fileKey(k)
	say := func(o Option) string {
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
	best, bestD, bestOpt := "", -1, Option{}
	for _, o := range opts {
		if d := EditDistance(name, o.Key); bestD < 0 || d < bestD {
			best, bestD, bestOpt = o.Key, d, o
		}
	}
	for _, ds := range dsKeys {
		if d := EditDistance(name, ds); d < bestD {
			best, bestD, bestOpt = ds, d, Option{}
		}
	}
	if bestOpt.Key != "" {
		return say(bestOpt)
	}
	return best
}

// KindName says what a value of type t is, for messages: "a whole number".
func KindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Uint64:
		return "a whole number"
	case reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(KindName(t.Elem()), "a ") + "s"
	}
	return t.String()
}

// Nearest is the candidate with the smallest edit distance to s (the first
// in order on a tie).
func Nearest(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		if d := EditDistance(s, c); bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// EditDistance is the Levenshtein distance between a and b, in bytes.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
