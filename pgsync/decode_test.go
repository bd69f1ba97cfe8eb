package pgsync

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/stretchr/testify/require"
)

func TestTextValues(t *testing.T) {
	for _, c := range []struct {
		oid  uint32
		in   string
		want string
	}{
		{oidBool, "t", "true"}, {oidBool, "f", "false"},
		{oidInt4, "-12", "-12"}, {oidInt2, "7", "7"},
		{20, "9007199254740993", `"9007199254740993"`}, // int8 stays a string
		{oidFloat8, "1.5", "1.5"}, {oidFloat8, "NaN", `"NaN"`}, {oidFloat4, "Infinity", `"Infinity"`},
		{oidJSONB, `{"a":[1]}`, `{"a":[1]}`}, {oidJSON, `{bad`, `"{bad"`},
		{25, `he said "hi"`, `"he said \"hi\""`}, {1700, "1.10", `"1.10"`},
	} {
		require.JSONEq(t, c.want, string(textValue(c.oid, c.in)), "%d %q", c.oid, c.in)
	}
}

// TestChangeEvent: the event of a change as Electric's runtime reads it, with the
// source's columns, the key from the key columns and old values for replica full.
func TestChangeEvent(t *testing.T) {
	rel := &pglogrepl.RelationMessage{Namespace: "public", RelationName: `we"ird`, Columns: []*pglogrepl.RelationMessageColumn{
		{Flags: 1, Name: "id", DataType: oidInt4}, {Name: "v", DataType: 25}, {Name: "blob", DataType: 25}}}
	tup := func(vals ...string) *pglogrepl.TupleData {
		td := &pglogrepl.TupleData{}
		for _, v := range vals {
			switch v {
			case "<null>":
				td.Columns = append(td.Columns, &pglogrepl.TupleDataColumn{DataType: pglogrepl.TupleDataTypeNull})
			case "<toast>":
				td.Columns = append(td.Columns, &pglogrepl.TupleDataColumn{DataType: pglogrepl.TupleDataTypeToast})
			default:
				td.Columns = append(td.Columns, &pglogrepl.TupleDataColumn{DataType: pglogrepl.TupleDataTypeText, Data: []byte(v)})
			}
		}
		return td
	}
	c := decodeChange(rel, "update", tup("1", "new", "<toast>"), tup("1", "old", "<null>"), 'O')
	require.Equal(t, `"public"."we""ird"/"1"`, c.key)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var ev struct {
		Type, Key string
		Value     struct {
			Headers  map[string]any
			Key      string
			Value    json.RawMessage
			OldValue json.RawMessage `json:"old_value"`
		}
		Headers map[string]any
	}
	require.NoError(t, json.Unmarshal(c.event(&source{replica: "full"}, 42, 7, at), &ev))
	require.Equal(t, ChangeType, ev.Type)
	require.Equal(t, c.key, ev.Key)
	require.Equal(t, "update", ev.Headers["operation"])
	require.Equal(t, "42", ev.Value.Headers["lsn"])
	require.JSONEq(t, `{"id":1,"v":"new"}`, string(ev.Value.Value), "an unchanged TOASTed value is not sent")
	require.JSONEq(t, `{"id":1,"v":"old","blob":null}`, string(ev.Value.OldValue))
	require.NoError(t, json.Unmarshal(c.event(&source{replica: "default", columns: []string{"v"}}, 42, 7, at), &ev))
	require.JSONEq(t, `{"v":"new"}`, string(ev.Value.Value))

	d := decodeChange(rel, "delete", nil, tup("2", "<null>", "<null>"), 'K')
	require.Equal(t, `"public"."we""ird"/"2"`, d.key)
	require.JSONEq(t, `{"id":2}`, string(d.rowJSON(d.row, &source{})))
}
