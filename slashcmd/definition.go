// Package slashcmd owns slash-command definitions: their validation, the per-owner layers
// of dynamic commands, and the effective rows materialized into an entity's stream (the
// names' grammar is the composer's: package wire/composer; the tables are package
// slashcmd/slashdb's). It imports nothing from the database side.
package slashcmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// Argument types a slash-command argument may declare.
const (
	ArgString  = "string"
	ArgNumber  = "number"
	ArgBoolean = "boolean"
)

// Argument is one declared argument of a slash command (the reference's
// SlashCommandArgumentDefinition).
type Argument struct {
	Name        string  `json:"name"`
	Type        string  `json:"type"` // string | number | boolean
	Required    *bool   `json:"required,omitempty"`
	Description *string `json:"description,omitempty"`
}

// Definition is a slash-command definition as declared on an entity type or registered
// by a handler (the reference's SlashCommandDefinition). Name has no leading slash.
type Definition struct {
	Name        string     `json:"name"`
	Description *string    `json:"description,omitempty"`
	Arguments   []Argument `json:"arguments,omitempty"`
}

// Limits bound slash-command definitions. They are entityd additions: the reference
// has no limits. A zero field means unlimited. MaxNameLength and MaxDescriptionLength
// apply to commands and to their arguments alike, and count Unicode code points.
type Limits struct {
	MaxNameLength        int
	MaxDescriptionLength int
	MaxArguments         int // per command
	MaxCommands          int // per list
	// MaxOwnerBytes bounds a dynamic registration's owner, MaxOwners the distinct owners
	// of one entity's commands: owners are stored with every layer and shown in every
	// row, so without a bound one client could make each write of the entity huge.
	MaxOwnerBytes int
	MaxOwners     int
}

// MaxVersionBytes bounds a dynamic registration's version.
const MaxVersionBytes = 256

// DefaultLimits are the limits entityd applies to entity-type registrations.
var DefaultLimits = Limits{MaxNameLength: 64, MaxDescriptionLength: 1000, MaxArguments: 32, MaxCommands: 500,
	MaxOwnerBytes: 256, MaxOwners: 64}

// ParseDefinitions decodes definitions that passed CheckShape and ValidateDefinitions.
// Absent (nil) input gives nil. Unknown fields are rejected, as CheckShape does.
func ParseDefinitions(raw json.RawMessage) ([]Definition, error) {
	if raw == nil {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var defs []Definition
	if err := dec.Decode(&defs); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("slashcmd: unexpected data after the definitions")
	}
	return defs, nil
}
