package slashcmd

import (
	"errors"
	"strconv"

	"github.com/entityd/entityd/internal/textpolicy"
	"github.com/entityd/entityd/internal/validation"
)

// ErrTooManyOwners refuses a registration that would give an entity's commands more
// than Limits.MaxOwners distinct owners.
var ErrTooManyOwners = errors.New("too many slash-command owners for one entity")

// checkOwnerAndVersion applies the identifier rule and the length limits to a dynamic
// registration's owner and version (details at /owner and /version).
func checkOwnerAndVersion(owner string, version *string, limits Limits) validation.Details {
	var d validation.Details
	if p := textpolicy.Check(owner, textpolicy.Name); p != "" {
		d.Add("/owner", p)
	} else if limits.MaxOwnerBytes > 0 && len(owner) > limits.MaxOwnerBytes {
		d.Add("/owner", "must be at most "+strconv.Itoa(limits.MaxOwnerBytes)+" bytes")
	}
	if version != nil {
		if p := textpolicy.Check(*version, textpolicy.Name); p != "" {
			d.Add("/version", p)
		} else if len(*version) > MaxVersionBytes {
			d.Add("/version", "must be at most "+strconv.Itoa(MaxVersionBytes)+" bytes")
		}
	}
	return d
}

// owners counts the distinct owners of the set's layers.
func (s *Set) owners() int {
	seen := map[string]bool{}
	for _, e := range s.entries {
		for _, l := range e.Layers {
			seen[l.Owner] = true
		}
	}
	return len(seen)
}

// checkOwners refuses a change that leaves more owners than the limit and more than
// there were (an entity already over a lowered limit may still shrink).
func (s *Set) checkOwners(before int) error {
	if s.limits.MaxOwners <= 0 {
		return nil
	}
	if n := s.owners(); n > s.limits.MaxOwners && n > before {
		return ErrTooManyOwners
	}
	return nil
}
