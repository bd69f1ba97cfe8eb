package entityapi

// Error codes of Electric's entity API (the reference's codes; the HTTP server's own
// are in package api).
const (
	CodeUnknownEntityType    = "UNKNOWN_ENTITY_TYPE"
	CodeDuplicateURL         = "DUPLICATE_URL"
	CodeInvalidSignal        = "INVALID_SIGNAL"
	CodeSchemaKeyExists      = "SCHEMA_KEY_EXISTS"
	CodeUnknownMessageType   = "UNKNOWN_MESSAGE_TYPE"
	CodeIdempotencyKeyReused = "IDEMPOTENCY_KEY_REUSED"
	// entityd's webhook sources (the reference has no ingestion of its own)
	CodeWebhookSourceExists = "WEBHOOK_SOURCE_EXISTS"
	CodeRateLimited         = "RATE_LIMITED"
)
