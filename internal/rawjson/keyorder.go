package rawjson

import (
	"math"
	"sort"
	"strconv"
)

// JSKeyOrder returns keys in the order JavaScript enumerates an object's own string
// keys: canonical array indices ascending, then the rest in insertion order. Validators
// that must report problems in the reference's (JavaScript's) order use it.
func JSKeyOrder(keys []string) []string {
	n := 0
	for _, k := range keys {
		if _, ok := ArrayIndex(k); ok {
			n++
		}
	}
	if n == 0 {
		return keys
	}
	idx := make([]string, 0, n)
	rest := make([]string, 0, len(keys)-n)
	for _, k := range keys {
		if _, ok := ArrayIndex(k); ok {
			idx = append(idx, k)
		} else {
			rest = append(rest, k)
		}
	}
	sort.SliceStable(idx, func(i, j int) bool {
		a, _ := ArrayIndex(idx[i])
		b, _ := ArrayIndex(idx[j])
		return a < b
	})
	return append(idx, rest...)
}

// ArrayIndex reports whether k is a canonical JavaScript array index ("0".."4294967294").
func ArrayIndex(k string) (uint64, bool) {
	if k == "" || len(k) > 10 || (len(k) > 1 && k[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < '0' || k[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(k, 10, 64)
	if err != nil || n >= math.MaxUint32 {
		return 0, false
	}
	return n, true
}
