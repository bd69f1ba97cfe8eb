package pgsync

import (
	"errors"
	"strings"

	"github.com/entityd/entityd/migrations"
)

// Table is a table named by an observation: schema and name, unquoted identifiers.
type Table struct{ Schema, Name string }

// Key is how the allow-list and the sources name the table: "schema.table".
func (t Table) Key() string { return t.Schema + "." + t.Name }

// MaxIdentifier is Postgres's identifier length (NAMEDATALEN - 1).
const MaxIdentifier = 63

// ErrBadTable: a table name ParseTable does not accept.
var ErrBadTable = errors.New(`pgSync table must be "table" or "schema.table", each an identifier of letters, digits, _ and $ (not starting with a digit or $), at most 63 bytes`)

// ParseTable reads "table" (schema public) or "schema.table". Only plain identifiers
// are accepted — the name goes into the allow-list comparison and into quoted SQL
// identifiers, and a plain identifier means the same thing in both; quoted names,
// whitespace and anything else are refused.
func ParseTable(s string) (Table, error) {
	schema, name, ok := strings.Cut(s, ".")
	if !ok {
		schema, name = "public", s
	}
	if !identifier(schema) || !identifier(name) {
		return Table{}, ErrBadTable
	}
	return Table{Schema: schema, Name: name}, nil
}

// identifier reports whether s is a plain SQL identifier.
func identifier(s string) bool {
	if s == "" || len(s) > MaxIdentifier {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '$'):
		default:
			return false
		}
	}
	return true
}

// reservedSchemas hold Postgres's own catalogs.
var reservedSchemas = map[string]bool{"pg_catalog": true, "information_schema": true, "pg_toast": true}

// ownTable reports whether t may be one of entityd's own tables or views (by name, in
// any schema: entityd's schema is whatever its connection's search_path says) or a
// system catalog. Observing one would expose every tenant's rows.
func ownTable(t Table) bool {
	if reservedSchemas[t.Schema] || strings.HasPrefix(t.Schema, "pg_") {
		return true
	}
	_, owned := migrations.Owners[t.Name]
	_, published := migrations.Published[t.Name]
	return owned || published || t.Name == migrations.VersionTable
}

// ParseAllowList reads the operator's list of observable tables (--pg-sync-tables). A
// name that is not a plain table name, or that names one of entityd's own tables, is an
// error: the server refuses to start rather than expose them.
func ParseAllowList(names []string) (map[string]Table, error) {
	out := map[string]Table{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		t, err := ParseTable(n)
		if err != nil {
			return nil, errors.New("pgsync: allow-list entry " + n + ": " + err.Error())
		}
		if ownTable(t) {
			return nil, errors.New("pgsync: allow-list entry " + n + " is one of entityd's own tables or a system catalog; those are never observable")
		}
		out[t.Key()] = t
	}
	return out, nil
}

// ValidIdentifier reports whether s is a plain SQL identifier (a column name).
func ValidIdentifier(s string) bool { return identifier(s) }
