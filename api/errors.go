package api

import (
	"net/http"

	"github.com/entityd/entityd/internal/httpx"
)

// Error codes of the Electric Agents error envelope.
const (
	CodeInvalidRequest         = "INVALID_REQUEST"
	CodeUnauthorized           = "UNAUTHORIZED"
	CodeNotFound               = "NOT_FOUND"
	CodeNotRunning             = "NOT_RUNNING"
	CodeSchemaValidationFailed = "SCHEMA_VALIDATION_FAILED"
	CodeUnknownEventType       = "UNKNOWN_EVENT_TYPE"
	CodePayloadTooLarge        = httpx.CodePayloadTooLarge
	CodeMethodNotAllowed       = "METHOD_NOT_ALLOWED"
	CodeInternal               = "INTERNAL_SERVER_ERROR"
	CodeServerStopping         = "SERVER_STOPPING"
	CodeRequestTimeout         = httpx.CodeRequestTimeout
)

// Error is an API error: an HTTP status plus the envelope (see internal/httpx).
type Error = httpx.Error

func newError(status int, code, message string) *Error { return httpx.New(status, code, message) }

// writeError writes e as the error envelope.
func writeError(w http.ResponseWriter, e *Error) { httpx.WriteError(w, e) }

// writeJSON writes v as a JSON response.
func writeJSON(w http.ResponseWriter, status int, v any) { httpx.WriteJSON(w, status, v) }
