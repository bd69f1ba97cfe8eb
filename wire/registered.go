package wire

import "encoding/json"

// RegisteredWake delivers a `wake` event that a wake registration appended (POST
// /_electric/wake, a spawn's `wake`, a manifest entry): the source changed, one of its
// runs finished, or the registration timed out. It is the event Electric's runtime
// handles, so a Go handler can be the parent of a runFinished wake as well.
type RegisteredWake struct {
	// Key is the event's key ("wake-<registration>-<source offset>").
	Key string
	// Source is the URL (or stream path) of what changed.
	Source string
	// Timeout is true when nothing matched within the registration's timeoutMs.
	Timeout bool
	// Changes are the matched changes as the registration records them
	// ({collection, kind, key, …}), in source order.
	Changes []json.RawMessage
	// FinishedChild is set for a runFinished wake whose source is a child of this entity.
	FinishedChild *FinishedChild
}

func (RegisteredWake) isWake()      {}
func (RegisteredWake) Kind() string { return "registered" }

// FinishedChild is a child's finished run: its status ("completed" or "failed"), its
// reply text (the run's text_delta rows, unless the registration asked for none) and,
// for a failed run, its error messages.
type FinishedChild struct {
	URL       string `json:"url"`
	Type      string `json:"type"`
	RunStatus string `json:"run_status"`
	Response  string `json:"response,omitempty"`
	Error     string `json:"error,omitempty"`
}

// registeredWake reads a registration's `wake` event; nil for any other `wake` value.
func registeredWake(ev *StreamEvent) Wake {
	var v struct {
		Source        string            `json:"source"`
		Timeout       bool              `json:"timeout"`
		Changes       []json.RawMessage `json:"changes"`
		FinishedChild *FinishedChild    `json:"finished_child"`
	}
	if json.Unmarshal(ev.Value, &v) != nil || v.Source == "" || v.Changes == nil {
		return nil
	}
	return RegisteredWake{Key: ev.Key, Source: v.Source, Timeout: v.Timeout, Changes: v.Changes, FinishedChild: v.FinishedChild}
}
