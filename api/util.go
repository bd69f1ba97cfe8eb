package api

import (
	"crypto/subtle"
	"sort"
	"strconv"

	"github.com/entityd/entityd/internal/validation"
)

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func validationDetails(path, message string) validation.Details {
	return validation.Details{{Path: path, Message: message}}
}

func constantTimeEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
