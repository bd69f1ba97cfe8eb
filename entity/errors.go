// Package entity is the registry of entity types and entities: registering types, spawning
// entities with their stream, reading and listing them, and the status machine that
// signals drive. It owns the entity_types and entities tables; the stream of every
// entity lives in streamdb.
package entity

import (
	"errors"

	"github.com/entityd/entityd/internal/validation"
)

var (
	ErrTypeNotFound   = errors.New("entity type not found")
	ErrNotFound       = errors.New("entity not found")
	ErrDuplicate      = errors.New("an entity already exists at this URL")
	ErrParentNotFound = errors.New("parent entity not found")
	ErrNotRunning     = errors.New("entity is not accepting writes")
	// ErrForkInProgress refuses a send to, or a second fork of, an entity being forked.
	ErrForkInProgress = errors.New("entity subtree is being forked")
)

// SchemaKeyExistsError refuses a schema amendment that would replace an existing key.
type SchemaKeyExistsError struct{ Key string }

func (e *SchemaKeyExistsError) Error() string { return "schema key already exists: " + e.Key }

// ValidationError carries {path,message} details; Semantic distinguishes the 422 layer
// (the request is well-formed but its content is refused) from the 400 layer.
type ValidationError struct {
	Message  string
	Details  validation.Details
	Semantic bool
}

func (e *ValidationError) Error() string { return e.Message }

// InvalidSignalError refuses a signal the entity's status does not allow.
type InvalidSignalError struct{ Status Status }

func (e *InvalidSignalError) Error() string {
	return "entity is " + string(e.Status) + " and takes no signals"
}
