package inbox

import (
	"context"
	"encoding/json"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/principal"
	"github.com/entityd/entityd/internal/validation"
)

// isIdentityUpdate reports whether req is an update_identity message to a principal
// entity: the one change of a principal entity, made by privileged senders only.
func isIdentityUpdate(e *entity.Entity, req *SendRequest) bool {
	return req.Type == entity.IdentityUpdateType && e.Type == entitypath.PrincipalType
}

// checkIdentity holds an update_identity payload (already valid by the principal type's
// inbox schema) to the entity it is sent to: the identity must name that principal, so
// that no message makes one principal's entity claim to be another (Electric's server
// stores whatever identity it is given).
func checkIdentity(e *entity.Entity, payload json.RawMessage) validation.Details {
	p, ok := principal.ParseURL(e.URL)
	if !ok || payload == nil {
		return nil
	}
	var body struct {
		Identity struct{ Kind, ID, Key, URL string } `json:"identity"`
	}
	if json.Unmarshal(payload, &body) != nil {
		return nil // the schema has answered already
	}
	var d validation.Details
	for _, f := range []struct{ field, got, want string }{
		{"kind", body.Identity.Kind, p.Kind}, {"id", body.Identity.ID, p.ID},
		{"key", body.Identity.Key, p.String()}, {"url", body.Identity.URL, p.URL()},
	} {
		if f.got != f.want {
			d.Add("/identity/"+f.field, "must be "+f.want+", the principal this entity is")
		}
	}
	if len(d) == 0 {
		return nil
	}
	return d
}

// identityOf is the identity an update_identity payload carries.
func identityOf(payload json.RawMessage) json.RawMessage {
	var body struct {
		Identity json.RawMessage `json:"identity"`
	}
	_ = json.Unmarshal(payload, &body)
	return body.Identity
}

// ensureSender makes the sender's principal entity when req asks for it: the URL that
// becomes the message's "from" names an entity (Electric's UI and runtime read senders
// as principal entities). A sender that cannot have one (an id with '/') sends without.
func (s *Sender) ensureSender(ctx context.Context, req *SendRequest) error {
	if !req.EnsureSender {
		return nil
	}
	p, ok := principal.ParseURL(req.Sender)
	if !ok || !entity.Materializable(p) {
		return nil
	}
	_, err := s.registry.EnsurePrincipal(ctx, p)
	return err
}
