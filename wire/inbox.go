package wire

// Modes of an inbox message.
const (
	ModeImmediate = "immediate"
	ModeQueued    = "queued"
	ModePaused    = "paused"
	ModeSteer     = "steer"
)

// InboxEventType is the State Protocol event type of inbox messages.
const InboxEventType = "inbox"

// ValidMode reports whether m is an inbox mode.
func ValidMode(m string) bool {
	return m == ModeImmediate || m == ModeQueued || m == ModePaused || m == ModeSteer
}
