package pgsync

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/wire"
)

// change is one row change of a replicated transaction, decoded once and turned into
// an event per observing source.
type change struct {
	table  Table
	op     string // insert, update, delete
	key    string // Electric's row key: "schema"."table"/"pk1"/...
	cols   []string
	row    []json.RawMessage // by column; nil: not sent (an unchanged TOASTed value, or a delete's non-key column)
	oldRow []json.RawMessage // replica identity full: the old row of an update or delete
}

// decodeChange reads a pgoutput insert, update or delete against its relation.
func decodeChange(rel *pglogrepl.RelationMessage, op string, newTuple, oldTuple *pglogrepl.TupleData, oldType uint8) *change {
	c := &change{table: Table{Schema: rel.Namespace, Name: rel.RelationName}, op: op}
	c.cols = make([]string, len(rel.Columns))
	for i, col := range rel.Columns {
		c.cols[i] = col.Name
	}
	keyFrom := newTuple
	switch op {
	case "delete":
		keyFrom = oldTuple
		c.row = tupleValues(rel, oldTuple, oldType == 'K')
		if oldType == 'O' {
			c.oldRow = c.row
		}
	default:
		c.row = tupleValues(rel, newTuple, false)
		if oldType == 'O' && oldTuple != nil {
			c.oldRow = tupleValues(rel, oldTuple, false)
		}
	}
	c.key = rowKey(rel, keyFrom)
	return c
}

// tupleValues renders a tuple's columns as JSON (nil for a value not sent). keysOnly
// keeps only the replica identity's columns (a delete's key tuple carries nulls for
// the others).
func tupleValues(rel *pglogrepl.RelationMessage, t *pglogrepl.TupleData, keysOnly bool) []json.RawMessage {
	out := make([]json.RawMessage, len(rel.Columns))
	if t == nil {
		return out
	}
	for i, col := range t.Columns {
		if i >= len(rel.Columns) {
			break
		}
		if keysOnly && rel.Columns[i].Flags&1 == 0 {
			continue
		}
		switch col.DataType {
		case pglogrepl.TupleDataTypeNull:
			out[i] = json.RawMessage("null")
		case pglogrepl.TupleDataTypeText:
			out[i] = textValue(rel.Columns[i].DataType, string(col.Data))
		}
	}
	return out
}

// Type OIDs whose text form becomes a JSON value other than a string, as Electric's
// client parses them (int8 stays a string: JSON numbers lose its precision, and the
// reference's bridge writes its BigInt as a string too).
const (
	oidBool    = 16
	oidInt2    = 21
	oidInt4    = 23
	oidFloat4  = 700
	oidFloat8  = 701
	oidJSON    = 114
	oidJSONB   = 3802
	oidOidType = 26
)

// textValue is a column's text-format value as JSON.
func textValue(oid uint32, s string) json.RawMessage {
	switch oid {
	case oidBool:
		if s == "t" {
			return json.RawMessage("true")
		}
		if s == "f" {
			return json.RawMessage("false")
		}
	case oidInt2, oidInt4, oidOidType:
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			return json.RawMessage(s)
		}
	case oidFloat4, oidFloat8:
		if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return json.RawMessage(strconv.FormatFloat(f, 'g', -1, 64))
		}
	case oidJSON, oidJSONB:
		if json.Valid([]byte(s)) {
			return json.RawMessage(s)
		}
	}
	b, _ := json.Marshal(s)
	return b
}

// rowKey is Electric's key of a row: the quoted relation, then each key column's value
// quoted ("public"."items"/"1"); the whole row's values when the table has no key
// columns (replica identity full without a primary key).
func rowKey(rel *pglogrepl.RelationMessage, t *pglogrepl.TupleData) string {
	var b strings.Builder
	b.WriteString(quoteIdent(rel.Namespace) + "." + quoteIdent(rel.RelationName))
	if t == nil {
		return b.String()
	}
	anyKey := slices.ContainsFunc(rel.Columns, func(c *pglogrepl.RelationMessageColumn) bool { return c.Flags&1 != 0 })
	for i, col := range t.Columns {
		if i >= len(rel.Columns) || anyKey && rel.Columns[i].Flags&1 == 0 {
			continue
		}
		b.WriteByte('/')
		if col.DataType == pglogrepl.TupleDataTypeNull {
			b.WriteString("_")
			continue
		}
		b.WriteString(quoteIdent(string(col.Data)))
	}
	return b.String()
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// event is the change as a source sees it: Electric's pg_sync_change event, whose value
// is the change message ({headers, key, value, old_value?}) with the source's columns.
func (c *change) event(src *source, lsn pglogrepl.LSN, xid uint32, at time.Time) []byte {
	var h rawjson.Object
	h.String("operation", c.op)
	rel, _ := json.Marshal([]string{c.table.Schema, c.table.Name})
	h.Raw("relation", rel)
	h.String("lsn", strconv.FormatUint(uint64(lsn), 10))
	h.Raw("txids", []byte("["+strconv.FormatUint(uint64(xid), 10)+"]"))
	var v rawjson.Object
	v.Raw("headers", h.Bytes())
	v.String("key", c.key)
	v.Raw("value", c.rowJSON(c.row, src))
	if src.replica == "full" && c.oldRow != nil {
		v.Raw("old_value", c.rowJSON(c.oldRow, src))
	}
	return wire.Event{Type: ChangeType, Key: c.key, Value: v.Bytes(), Operation: c.op, Timestamp: at.UTC()}.Marshal()
}

// rowJSON is the row's object with the source's columns (all when it named none).
func (c *change) rowJSON(row []json.RawMessage, src *source) []byte {
	var o rawjson.Object
	for i, name := range c.cols {
		if row[i] == nil || src.columns != nil && !slices.Contains(src.columns, name) {
			continue
		}
		o.Raw(name, row[i])
	}
	return o.Bytes()
}
