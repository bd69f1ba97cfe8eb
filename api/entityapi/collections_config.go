package entityapi

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/internal/httpx"
	"github.com/entityd/entityd/internal/jsonbody"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/internal/textpolicy"
	"github.com/entityd/entityd/internal/validation"
)

// Bounds of a type's externally_writable_collections.
const (
	maxWritableCollections = 64
	maxCollectionNameBytes = 256
)

// commentsContract is the contract of the UI's comments collection; the reference
// reserves the collection name "comments" for it and it for that name.
const commentsContract = "comments/v1"

// checkWritableCollections checks a type's externally_writable_collections as the
// reference's registration does: an object of {type, contract?, operations?,
// principalColumn?} with nothing else (400 with details), and "comments" and the
// comments/v1 contract only together (400). Names and strings are identifiers, bounded.
func checkWritableCollections(raw json.RawMessage) error {
	if raw == nil {
		return nil
	}
	members, err := rawjson.SplitObject(raw)
	if err != nil {
		return jsonbody.SchemaMismatch(validation.One("/externally_writable_collections", "must be object"))
	}
	var d validation.Details
	if len(members) > maxWritableCollections {
		d.Add("/externally_writable_collections", fmt.Sprintf("must NOT have more than %d properties", maxWritableCollections))
	}
	for _, m := range members {
		at := validation.Pointer("externally_writable_collections", m.Key)
		if m.Key == "" || len(m.Key) > maxCollectionNameBytes || !textpolicy.Valid(m.Key, textpolicy.Name) {
			d.Add(at, fmt.Sprintf("a collection name is an identifier of 1-%d bytes", maxCollectionNameBytes))
			continue
		}
		b, err := jsonbody.Parse(m.Value)
		if err != nil {
			d.Add(at, "must be object")
			continue
		}
		b.Only("type", "contract", "operations", "principalColumn")
		typ, ok := b.Str("type")
		if !ok && !b.Present("type") {
			b.Details.Add("", "must have required property 'type'")
		}
		b.MaxLen("type", typ, maxCollectionNameBytes)
		contract, _ := b.Str("contract")
		b.MaxLen("contract", contract, maxCollectionNameBytes)
		pc, _ := b.Str("principalColumn")
		b.MaxLen("principalColumn", pc, maxCollectionNameBytes)
		if ops := b.Raw("operations"); ops != nil {
			var list []string
			if json.Unmarshal(ops, &list) != nil {
				b.Details.Add("/operations", "must be an array of insert, update or delete")
			}
			for i, op := range list {
				if op != "insert" && op != "update" && op != "delete" {
					b.Details.Add(validation.Pointer("operations", i), "must be equal to one of the allowed values")
				}
			}
		}
		for _, e := range b.Details {
			d.Add(at+e.Path, e.Message)
		}
		if len(b.Details) > 0 {
			continue
		}
		if m.Key == "comments" && contract != commentsContract {
			return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest,
				`The externally-writable collection name "comments" is reserved for the "`+commentsContract+`" contract`)
		}
		if contract == commentsContract && m.Key != "comments" {
			return httpx.New(http.StatusBadRequest, api.CodeInvalidRequest,
				`The "`+commentsContract+`" contract must be registered under the collection name "comments"`)
		}
	}
	if len(d) > 0 {
		return jsonbody.SchemaMismatch(d)
	}
	return nil
}
