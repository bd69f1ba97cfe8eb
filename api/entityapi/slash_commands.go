package entityapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/api/dsapi"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/textpolicy"
	"github.com/entityd/entityd/internal/validation"
	"github.com/entityd/entityd/slashcmd"
	"github.com/entityd/entityd/slashcmd/slashdb"
)

// listSlashCommands is GET /_electric/entities/:type/:id/slash-commands: the effective
// commands sorted by name. The ETag is the collection stream's tail, so revalidation
// costs one indexed lookup.
func (s *handlers) listSlashCommands(w http.ResponseWriter, r *http.Request) error {
	url := entitypath.URL(api.Param(r, "type"), api.Param(r, "id"))
	m, err := s.streams.Lookup(r.Context(), entitypath.Collection(url))
	if err != nil {
		if _, err := s.entityAt(r); err != nil {
			return err
		}
		return dsapi.StreamError(w, err)
	}
	tag := `"` + m.Tail.String() + `"`
	w.Header().Set("ETag", tag)
	w.Header().Set("Cache-Control", "no-cache")
	if match := r.Header.Get("If-None-Match"); match != "" && match == tag {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	rows, err := s.registry.Commands().List(r.Context(), url)
	if err != nil {
		return err
	}
	if rows == nil {
		rows = []slashcmd.Row{}
	}
	httpx.WriteJSON(w, http.StatusOK, rows)
	return nil
}

// commandChange is the answer to a registration or unregistration over HTTP.
type commandChange struct {
	Changed bool          `json:"changed"`
	Txid    string        `json:"txid,omitempty"`
	Command *slashcmd.Row `json:"command"`
}

// putSlashCommand is PUT /_electric/entities/:type/:id/slash-commands/:name?owner=…:
// register a dynamic command (the owner's layer goes on top) for handlers not written in Go.
func (s *handlers) putSlashCommand(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entityAt(r)
	if err != nil {
		return err
	}
	if err := refusePrincipalMutation(e, "given slash commands"); err != nil {
		return err
	}
	name := api.Param(r, "name")
	b, err := s.kit.ReadJSON(w, r)
	if err != nil {
		return err
	}
	b.Only("name", "description", "arguments", "version")
	if v, ok := b.Str("name"); ok && v != name {
		b.Details.Add("/name", "must equal the command name in the URL")
	}
	version, hasVersion := b.Str("version")
	def := map[string]json.RawMessage{"name": mustJSON(name)}
	for _, k := range []string{"description", "arguments"} {
		if v := b.Raw(k); v != nil {
			def[k] = v
		}
	}
	shape := slashcmd.CheckShape(mustJSON([]any{def}), "")
	for _, d := range shape {
		b.Details.Add(trimFirstIndex(d.Path), d.Message)
	}
	// The text rule on the raw strings: decoding would turn a lone surrogate into U+FFFD.
	b.Details = append(b.Details, textpolicy.CheckJSON(mustJSON(def), "", textpolicy.Text)...)
	if err := b.Fail(); err != nil {
		return err
	}
	defs, err := slashcmd.ParseDefinitions(mustJSON([]any{def}))
	if err != nil {
		return httpx.BadRequest("Invalid slash command definition")
	}
	reg := slashcmd.Registration{Definition: defs[0], Owner: r.URL.Query().Get("owner")}
	if hasVersion {
		reg.Version = &version
	}
	res, err := s.registry.Commands().Apply(r.Context(), e.URL, func(set *slashcmd.Set) error { return set.Register(reg) })
	if err != nil {
		return s.commandError(err)
	}
	httpx.WriteJSON(w, http.StatusOK, changeOf(res, name))
	return nil
}

// deleteSlashCommand is DELETE /_electric/entities/:type/:id/slash-commands/:name?owner=…:
// remove the owner's layer (without owner: the top layer's owner), revealing the next
// layer, then the static command, or removing the row.
func (s *handlers) deleteSlashCommand(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entityAt(r)
	if err != nil {
		return err
	}
	if err := refusePrincipalMutation(e, "given slash commands"); err != nil {
		return err
	}
	name := api.Param(r, "name")
	owner := r.URL.Query().Get("owner")
	res, err := s.registry.Commands().Apply(r.Context(), e.URL, func(set *slashcmd.Set) error {
		set.Unregister(name, owner)
		return nil
	})
	if err != nil {
		return s.commandError(err)
	}
	httpx.WriteJSON(w, http.StatusOK, changeOf(res, name))
	return nil
}

// changeOf reports what an Apply did to the command name.
func changeOf(res *slashdb.Result, name string) commandChange {
	out := commandChange{Changed: len(res.Changes) > 0, Txid: res.Txid}
	for i := range res.Rows {
		if res.Rows[i].Name == name {
			out.Command = &res.Rows[i]
		}
	}
	return out
}

func (s *handlers) commandError(err error) error {
	limits := s.registry.Commands().Limits()
	var invalid *slashcmd.InvalidError
	switch {
	case errors.As(err, &invalid):
		return httpx.New(http.StatusUnprocessableEntity, api.CodeSchemaValidationFailed, "Validation failed").WithDetails(invalid.Details)
	case errors.Is(err, slashcmd.ErrTooManyOwners):
		return httpx.New(http.StatusUnprocessableEntity, api.CodeSchemaValidationFailed, "Too many slash-command owners").
			WithDetails(validation.Details{{Path: "/owner", Message: "an entity's slash commands can have at most " +
				strconv.Itoa(limits.MaxOwners) + " distinct owners"}})
	case errors.Is(err, slashcmd.ErrTooManyCommands):
		return httpx.New(http.StatusUnprocessableEntity, api.CodeSchemaValidationFailed, "Too many slash commands").
			WithDetails(validation.Details{{Path: "/", Message: "an entity can have at most 500 slash commands"}})
	case errors.Is(err, slashdb.ErrEntityClosed):
		return httpx.New(http.StatusConflict, api.CodeNotRunning, "Entity is not accepting writes")
	case errors.Is(err, slashdb.ErrEntityNotFound):
		return httpx.New(http.StatusNotFound, api.CodeNotFound, "Entity has no slash-command collection")
	}
	return err
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// trimFirstIndex turns "/0/description" into "/description".
func trimFirstIndex(p string) string {
	if len(p) >= 2 && p[:2] == "/0" {
		if p = p[2:]; p == "" {
			return "/"
		}
	}
	return p
}
