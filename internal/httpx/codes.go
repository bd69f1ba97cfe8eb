package httpx

// Codes of failures every route can answer, whichever room it is in.
const (
	// CodePayloadTooLarge is a 413: the body is over the route's limit.
	CodePayloadTooLarge = "PAYLOAD_TOO_LARGE"
	// CodeRequestTimeout is a 408: the body did not arrive within the read deadline.
	CodeRequestTimeout = "REQUEST_TIMEOUT"
	// CodeServiceUnavailable is a 503: retry shortly (the database, or bytes in flight).
	CodeServiceUnavailable = "SERVICE_UNAVAILABLE"
)

// Codes of the error envelope that more than one room answers with.
const (
	CodeNotFound         = "NOT_FOUND"
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	// CodeNotRunning: the entity does not accept writes (stopped or killed).
	CodeNotRunning = "NOT_RUNNING"
)

// BadRequest is a 400 INVALID_REQUEST with message.
func BadRequest(message string) *Error {
	return New(400, CodeInvalidRequest, message)
}
