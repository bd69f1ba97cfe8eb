package api

import (
	"encoding/json"
	"net/http"

	"github.com/entityd/entityd/internal/validation"
)

// Error codes of the Electric Agents error envelope.
const (
	CodeInvalidRequest         = "INVALID_REQUEST"
	CodeUnauthorized           = "UNAUTHORIZED"
	CodeNotFound               = "NOT_FOUND"
	CodeUnknownEntityType      = "UNKNOWN_ENTITY_TYPE"
	CodeDuplicateURL           = "DUPLICATE_URL"
	CodeNotRunning             = "NOT_RUNNING"
	CodeInvalidSignal          = "INVALID_SIGNAL"
	CodeSchemaKeyExists        = "SCHEMA_KEY_EXISTS"
	CodeSchemaValidationFailed = "SCHEMA_VALIDATION_FAILED"
	CodeUnknownMessageType     = "UNKNOWN_MESSAGE_TYPE"
	CodeIdempotencyKeyReused   = "IDEMPOTENCY_KEY_REUSED"
	CodePayloadTooLarge        = "PAYLOAD_TOO_LARGE"
	CodeMethodNotAllowed       = "METHOD_NOT_ALLOWED"
	CodeInternal               = "INTERNAL_SERVER_ERROR"
	CodeServerStopping         = "SERVER_STOPPING"
	CodeRequestTimeout         = "REQUEST_TIMEOUT"
)

// Error is an API error: an HTTP status plus the envelope
// {"error":{"code","message","details"?}}.
type Error struct {
	Status  int
	Code    string
	Message string
	Details validation.Details
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func newError(status int, code, message string) *Error {
	return &Error{Status: status, Code: code, Message: message}
}

func (e *Error) withDetails(d validation.Details) *Error {
	e.Details = d
	return e
}

type envelope struct {
	Error envelopeBody `json:"error"`
}

type envelopeBody struct {
	Code    string             `json:"code"`
	Message string             `json:"message"`
	Details validation.Details `json:"details,omitempty"`
}

// writeError writes e as the error envelope.
func writeError(w http.ResponseWriter, e *Error) {
	body, _ := json.Marshal(envelope{Error: envelopeBody{Code: e.Code, Message: e.Message, Details: e.Details}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Del("Content-Length")
	w.WriteHeader(e.Status)
	_, _ = w.Write(body)
}

// writeJSON writes v as a JSON response.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeError(w, newError(http.StatusInternalServerError, CodeInternal, "Internal server error"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
