package acp

import (
	"strings"

	sdk "github.com/coder/acp-go-sdk"
)

// A session id is the URL of the entity the session is attached to ("/assistant/a1").
// The adapter keeps no state of its own, so session/load — in this adapter or in one an
// editor starts next week — must find the entity from the id alone; and a session's
// history is its entity's main stream, which every session of the entity shares, so the
// entity is all a session is.
//
// Two sessions of one entity open at once in one adapter still need distinct ids: the
// first gets the bare URL, later ones the URL, "#" and a random suffix
// ("/assistant/a1#3f9c0a1b"). session/load reads the entity from the part before "#"
// ('#' never occurs in an entity URL) and keeps the id it was given.

// sessionSuffixHex is the length of a suffix's random part, in bytes.
const sessionSuffixHex = 4

// freeSessionIDLocked is the id of a new session of the entity at entityURL: the URL,
// or the URL with a random suffix while a session of this adapter holds the URL. The
// caller holds a.mu and registers the session under the id before releasing it.
func (a *agent) freeSessionIDLocked(entityURL string) sdk.SessionId {
	id := sdk.SessionId(entityURL)
	for a.sessions[id] != nil {
		id = sdk.SessionId(entityURL + "#" + randomHex(sessionSuffixHex))
	}
	return id
}

// entityOfSession is the entity a session id names, ok false for an id that names none
// (ids of other agents, or of entityd adapters older than session/load).
func entityOfSession(id sdk.SessionId) (typ, entityID string, ok bool) {
	url, _, _ := strings.Cut(string(id), "#")
	if !strings.HasPrefix(url, "/") {
		return "", "", false
	}
	typ, entityID, err := ParseEntity(url)
	return typ, entityID, err == nil
}
