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
