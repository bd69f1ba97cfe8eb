package entityapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/authz"
	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/jsonbody"
	"github.com/entityd/entityd/internal/quota"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/internal/validation"
	"github.com/entityd/entityd/pgsync"
)

// Bounds of a pgSync registration's members (the body is bounded by MaxBodyBytes).
const (
	maxPgSyncMetadataValue = 1024
	maxPgSyncSourceRef     = 64
)

// registerPgSync is POST /_electric/pg-sync/register {options:{url?, table, columns?,
// replica?}, metadata?} → {sourceRef, streamUrl}: the caller's observation of a table on
// the operator's allow-list, served from entityd's own logical replication (the url of
// an Electric service is accepted and never contacted).
func (s *handlers) registerPgSync(w http.ResponseWriter, r *http.Request) error {
	if s.pgsync == nil {
		return httpx.New(http.StatusServiceUnavailable, api.CodeServiceUnavailable, "pgSync observations are not served by this server")
	}
	b, err := s.kit.ReadJSON(w, r)
	if err != nil {
		return err
	}
	b.Only("options", "metadata")
	if !b.Has("options") {
		b.Details.Add("/options", "must have required property 'options'")
	}
	optsRaw := b.Object("options")
	metaRaw := b.Object("metadata")
	if err := b.Fail(); err != nil {
		return err
	}
	p := api.Caller(r)
	o := &pgsync.Observation{Owner: p.String(), Options: optsRaw}
	var d validation.Details
	if optsRaw != nil {
		d = append(d, pgSyncOptions(optsRaw, o)...)
	}
	if metaRaw != nil {
		d = append(d, pgSyncMetadata(metaRaw, o)...)
	}
	if len(d) > 0 {
		return jsonbody.SchemaMismatch(d)
	}
	if o.EntityURL != "" {
		// the observing entity's readers may read the stream too (its rows wake the
		// entity, and its handler, which may run as another principal than the one
		// registering, reads them): only a principal that may write the entity names it
		e, err := s.registry.Known(r.Context(), o.EntityURL)
		if errors.Is(err, entity.ErrNotFound) {
			return httpx.New(http.StatusNotFound, api.CodeNotFound, "Entity not found at "+o.EntityURL+" (metadata.entityUrl)")
		}
		if err != nil {
			return err
		}
		if err := s.kit.RequireEntity(r, p, e, authz.Write); err != nil {
			return err
		}
	}
	ref, path, err := s.pgsync.Register(r.Context(), o)
	if err != nil {
		return pgSyncError(err)
	}
	var out rawjson.Object
	out.String("sourceRef", ref).String("streamUrl", path)
	writeJSONBytes(w, out.Bytes())
	return nil
}

// pgSyncOptions reads the options object into o.
func pgSyncOptions(raw json.RawMessage, o *pgsync.Observation) validation.Details {
	b, err := jsonbody.Parse(raw)
	if err != nil {
		return validation.Details{{Path: "/options", Message: "must be object"}}
	}
	b.Only("url", "table", "columns", "where", "params", "replica", "metadata")
	var inner validation.Details
	if m := b.Object("metadata"); m != nil {
		// a source's own metadata (pgSync({…, metadata})); the request's wins
		inner = prefixed("/options", pgSyncMetadata(m, o))
	}
	if url, ok := b.Text("url"); ok {
		b.MaxLen("url", url, pgsync.MaxURL)
	}
	table, ok := b.Str("table")
	if !ok && !b.Has("table") {
		b.Details.Add("/table", "must have required property 'table'")
	} else if ok {
		t, err := pgsync.ParseTable(table)
		if err != nil {
			b.Details.Add("/table", err.Error())
		}
		o.Table = t
	}
	if b.Has("where") || b.Has("params") {
		// a where clause is SQL the server would have to evaluate against every change;
		// entityd does not run callers' SQL (see docs/ELECTRIC.md)
		b.Details.Add("/where", "pgSync where filters are not supported by entityd; observe the table (optionally some columns) and filter in the handler")
	}
	if replica, ok := b.Enum("replica", "default", "full"); ok {
		o.Replica = replica
	}
	if v := b.Raw("columns"); v != nil {
		cols, problem := pgSyncColumns(v)
		if problem != "" {
			b.Details.Add("/columns", problem)
		}
		o.Columns = cols
	}
	return append(prefixed("/options", b.Details), inner...)
}

// pgSyncColumns reads a list of distinct column names.
func pgSyncColumns(v json.RawMessage) ([]string, string) {
	var cols []string
	if jsonbody.Kind(v) != 'a' || json.Unmarshal(v, &cols) != nil {
		return nil, "must be array of strings"
	}
	if len(cols) == 0 || len(cols) > pgsync.MaxColumns {
		return nil, fmt.Sprintf("must have 1-%d items", pgsync.MaxColumns)
	}
	seen := map[string]bool{}
	for _, c := range cols {
		if !pgsync.ValidIdentifier(c) {
			return nil, "items must be column names (identifiers of letters, digits, _ and $, at most 63 bytes)"
		}
		if seen[c] {
			return nil, "must NOT have duplicate items"
		}
		seen[c] = true
	}
	return cols, ""
}

// pgSyncMetadata reads the runtime's metadata: entityUrl is part of the observation's
// identity; the others vary per wake and are only checked.
func pgSyncMetadata(raw json.RawMessage, o *pgsync.Observation) validation.Details {
	b, err := jsonbody.Parse(raw)
	if err != nil {
		return validation.Details{{Path: "/metadata", Message: "must be object"}}
	}
	b.Only("entityUrl", "entityType", "streamPath", "runtimeConsumerId", "wakeId")
	for _, k := range []string{"entityUrl", "entityType", "streamPath", "runtimeConsumerId", "wakeId"} {
		if v, ok := b.Text(k); ok {
			b.MaxLen(k, v, maxPgSyncMetadataValue)
			if k == "entityUrl" {
				o.EntityURL = v
			}
		}
	}
	return prefixed("/metadata", b.Details)
}

func prefixed(prefix string, d validation.Details) validation.Details {
	for i := range d {
		d[i].Path = prefix + d[i].Path
	}
	return d
}

// pgSyncError answers what Register refused.
func pgSyncError(err error) error {
	var notObservable *pgsync.NotObservableError
	var invalid *pgsync.InvalidError
	switch {
	case errors.Is(err, pgsync.ErrUnavailable):
		return httpx.New(http.StatusServiceUnavailable, api.CodeServiceUnavailable, err.Error())
	case errors.Is(err, pgsync.ErrDisabled), errors.As(err, &notObservable):
		// nothing is observable (an empty allow-list) or not this table: the operator's
		// decision, not a state to retry
		return httpx.New(http.StatusForbidden, api.CodeForbidden, err.Error())
	case errors.As(err, &invalid):
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest, invalid.Message).
			WithDetails(validation.One("/options/"+invalid.Field, invalid.Message))
	case errors.Is(err, pgsync.ErrTooMany):
		e := httpx.New(http.StatusTooManyRequests, quota.CodeExceeded, "Too many pgSync observations for this principal")
		e.RetryAfter = quota.RetryAfter
		return e
	}
	return err
}

// deletePgSyncObservation is DELETE /_electric/entities/:type/:id/pg-sync-observations/
// :sourceRef → {txid}: the entity stops observing the source (its manifest entry and
// the wakes it anchors go; the source stays for other observers).
func (s *handlers) deletePgSyncObservation(w http.ResponseWriter, r *http.Request) error {
	if s.pgsync == nil {
		return httpx.New(http.StatusServiceUnavailable, api.CodeServiceUnavailable, "pgSync observations are not served by this server")
	}
	if err := refusePrincipalEntity(r, "unsubscribed from pg-sync sources"); err != nil {
		return err
	}
	e, err := s.entityAt(r)
	if err != nil {
		return err
	}
	ref := api.Param(r, "sourceRef")
	if ref == "" || len(ref) > maxPgSyncSourceRef || !hexOrDash(ref) {
		return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest,
			fmt.Sprintf("A pgSync sourceRef is 1-%d characters of 0-9, a-z and -", maxPgSyncSourceRef))
	}
	txid, err := s.pgsync.Unobserve(r.Context(), e, ref)
	if err != nil {
		return sendError(err) // an ended entity: 409 NOT_RUNNING
	}
	return writeTxid(w, txid)
}

// hexOrDash reports whether s is made of what source refs are made of (the runtime's
// own refs are hex; a dash allows other hashes).
func hexOrDash(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '-') {
			return false
		}
	}
	return true
}
