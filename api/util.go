package api

import (
	"crypto/subtle"
	"strconv"

	"github.com/entityd/entityd/internal/validation"
)

func validationDetails(path, message string) validation.Details {
	return validation.Details{{Path: path, Message: message}}
}

func constantTimeEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
