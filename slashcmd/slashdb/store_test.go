package slashdb_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/internal/schemas"
	"github.com/entityd/entityd/slashcmd"
	"github.com/entityd/entityd/slashcmd/slashdb"
	"github.com/entityd/entityd/streamdb"
)

// These tests run the slash-command service on a real, freshly migrated Postgres
// database, with entities spawned through the entity registry. After every step they
// look at everything the step wrote: the slash_commands table, and the events on the
// entity's main stream and its collection stream.

type storeEnv struct {
	t       *testing.T
	ctx     context.Context
	pool    *pgxpool.Pool
	streams *streamdb.Store
	reg     *entity.Registry
	svc     *slashdb.Service
	tails   map[string]streamdb.Offset // how far newEvents has read each stream
}

func newStoreEnv(t *testing.T) *storeEnv {
	t.Helper()
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	streams, err := streamdb.Open(ctx, pool, streamdb.Options{})
	require.NoError(t, err)
	t.Cleanup(streams.Close)
	reg := entity.New(streams, schemas.NewCache(), zap.NewNop(), entity.Options{})
	return &storeEnv{t: t, ctx: ctx, pool: pool, streams: streams, reg: reg, svc: reg.Commands(),
		tails: map[string]streamdb.Offset{}}
}

func (e *storeEnv) registerType(name, commands string) *entity.Type {
	e.t.Helper()
	ty := &entity.Type{Name: name, Description: "test type"}
	if commands != "" {
		ty.SlashCommands = json.RawMessage(commands)
	}
	out, err := e.reg.RegisterType(e.ctx, ty)
	require.NoError(e.t, err)
	return out
}

func (e *storeEnv) spawn(ty *entity.Type, id string) string {
	e.t.Helper()
	res, err := e.reg.Spawn(e.ctx, ty, entity.SpawnRequest{Type: ty.Name, InstanceID: id})
	require.NoError(e.t, err)
	return res.Entity.URL
}

func (e *storeEnv) kill(url string) {
	e.t.Helper()
	_, err := e.reg.Signal(e.ctx, url, entity.SignalRequest{Signal: "SIGKILL"})
	require.NoError(e.t, err)
}

// readAll returns the messages of path after from, and the tail.
func (e *storeEnv) readAll(path string, from streamdb.Offset) ([][]byte, streamdb.Offset, bool) {
	e.t.Helper()
	m, err := e.streams.Lookup(e.ctx, path)
	require.NoError(e.t, err, path)
	var out [][]byte
	for from.Seq < m.Tail.Seq {
		msgs, err := e.streams.Read(e.ctx, m, from, m.Tail)
		require.NoError(e.t, err)
		require.NotEmpty(e.t, msgs)
		for _, msg := range msgs {
			out = append(out, msg.Data)
		}
		from = msgs[len(msgs)-1].End
	}
	return out, m.Tail, m.Closed
}

// newEvents returns the messages appended to path since the last call.
func (e *storeEnv) newEvents(path string) [][]byte {
	e.t.Helper()
	msgs, tail, _ := e.readAll(path, e.tails[path])
	e.tails[path] = tail
	return msgs
}

// newCommandEvents returns the events appended since the last call to the entity's
// main stream, which must be exactly those appended to its collection stream.
func (e *storeEnv) newCommandEvents(url string) []wireEvent {
	e.t.Helper()
	main := e.newEvents(url + "/main")
	coll := e.newEvents(entitypath.Collection(url))
	require.Equal(e.t, asStrings(main), asStrings(coll), "the main and the collection stream get the same events")
	out := make([]wireEvent, len(main))
	for i, m := range main {
		out[i] = decodeEvent(e.t, m)
	}
	return out
}

// seed consumes the events of the spawn: entity_created on the main stream, then the
// seeded inserts, which are also all of the collection stream's. It returns them.
func (e *storeEnv) seed(url string) []wireEvent {
	e.t.Helper()
	main := e.newEvents(url + "/main")
	coll := e.newEvents(entitypath.Collection(url))
	require.NotEmpty(e.t, main)
	require.Contains(e.t, string(main[0]), `"type":"entity_created"`)
	require.Equal(e.t, asStrings(main[1:]), asStrings(coll))
	out := make([]wireEvent, len(coll))
	for i, m := range coll {
		out[i] = decodeEvent(e.t, m)
		require.Equal(e.t, "insert", out[i].Op)
	}
	return out
}

func asStrings(msgs [][]byte) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m)
	}
	return out
}

// wireEvent is a decoded State Protocol event.
type wireEvent struct {
	Raw     []byte
	Type    string
	Key     string
	Op      string
	Txid    string
	Value   *slashcmd.Row // nil for deletes
	Headers map[string]string
}

var rowKeys = []string{"key", "name", "description", "arguments", "source", "owner", "version", "updated_at", "dynamic_layers"}

// decodeEvent checks the envelope of a slash_command event and decodes it: inserts and
// updates carry the complete row (every field, absent ones as null), deletes no value.
func decodeEvent(t *testing.T, raw []byte) wireEvent {
	t.Helper()
	var top map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &top), "%s", raw)
	ev := wireEvent{Raw: raw}
	require.NoError(t, json.Unmarshal(top["type"], &ev.Type), "%s", raw)
	require.NoError(t, json.Unmarshal(top["key"], &ev.Key), "%s", raw)
	require.NoError(t, json.Unmarshal(top["headers"], &ev.Headers), "%s", raw)
	require.Equal(t, slashcmd.EventType, ev.Type, "%s", raw)
	ev.Op, ev.Txid = ev.Headers["operation"], ev.Headers["txid"]
	switch ev.Op {
	case "insert", "update":
		require.ElementsMatch(t, []string{"type", "key", "value", "headers"}, mapKeys(top), "%s", raw)
		var value map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(top["value"], &value))
		require.ElementsMatch(t, rowKeys, mapKeys(value), "every field of the row is written: %s", raw)
		dec := json.NewDecoder(bytes.NewReader(top["value"]))
		dec.DisallowUnknownFields()
		ev.Value = &slashcmd.Row{}
		require.NoError(t, dec.Decode(ev.Value))
		require.Equal(t, ev.Key, ev.Value.Key)
		requireStamp(t, ev.Value.UpdatedAt)
	case "delete":
		require.ElementsMatch(t, []string{"type", "key", "headers"}, mapKeys(top), "a delete has no value: %s", raw)
	default:
		t.Fatalf("operation %q: %s", ev.Op, raw)
	}
	return ev
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// requireStamp checks an updated_at: ISO 8601 in UTC with milliseconds, near now.
func requireStamp(t *testing.T, s string) {
	t.Helper()
	ts, err := time.Parse("2006-01-02T15:04:05.000Z", s)
	require.NoError(t, err, "updated_at %q", s)
	require.WithinDuration(t, time.Now(), ts, time.Minute)
}

// requireWrite checks the events of one transaction: one txid (a UUID) and a
// timestamp header on all of them, in order, with the given operations and rows
// (nil for a delete). It returns the txid.
func requireWrite(t *testing.T, events []wireEvent, want ...change) string {
	t.Helper()
	require.Len(t, events, len(want), "events: %v", eventStrings(events))
	txid := ""
	for i, ev := range events {
		if i == 0 {
			txid = ev.Txid
			_, err := uuid.Parse(txid)
			require.NoError(t, err, "txid %q", txid)
		}
		require.Equal(t, txid, ev.Txid, "one txid per transaction")
		_, err := time.Parse(time.RFC3339Nano, ev.Headers["timestamp"])
		require.NoError(t, err, "timestamp header of %s", ev.Raw)
		require.Equal(t, want[i].Name, ev.Key)
		require.Equal(t, want[i].Op, ev.Op, "%s", ev.Raw)
		require.Equal(t, want[i].Row, ev.Value, "%s", ev.Raw)
	}
	return txid
}

func eventStrings(events []wireEvent) []string {
	out := make([]string, len(events))
	for i, ev := range events {
		out[i] = string(ev.Raw)
	}
	return out
}

// tableRow is a row of the slash_commands table.
type tableRow struct {
	Name          string
	Description   *string
	Arguments     *string // JSON
	Source        string
	Owner         *string
	Version       *string
	UpdatedAt     time.Time
	StaticDef     *string // JSON
	DynamicLayers []slashcmd.Layer
	Xmin          string // changes whenever the row is written
}

func (e *storeEnv) table(url string) []tableRow {
	e.t.Helper()
	rows, err := e.pool.Query(e.ctx, `SELECT name, description, arguments::text, source, owner, version, updated_at,
			static_def::text, coalesce((SELECT json_agg(l.layer ORDER BY l.position) FROM slash_command_layers l
				WHERE l.entity_url = c.entity_url AND l.name = c.name), '[]')::text, xmin::text
		FROM slash_commands c WHERE entity_url = $1 ORDER BY name`, url)
	require.NoError(e.t, err)
	defer rows.Close()
	var out []tableRow
	for rows.Next() {
		var r tableRow
		var layers string
		require.NoError(e.t, rows.Scan(&r.Name, &r.Description, &r.Arguments, &r.Source, &r.Owner, &r.Version,
			&r.UpdatedAt, &r.StaticDef, &layers, &r.Xmin))
		require.NoError(e.t, json.Unmarshal([]byte(layers), &r.DynamicLayers))
		out = append(out, r)
	}
	require.NoError(e.t, rows.Err())
	return out
}

// staticDef is the static_def of a table row, decoded (nil when none).
func (r tableRow) staticDef(t *testing.T) *slashcmd.Definition {
	t.Helper()
	if r.StaticDef == nil {
		return nil
	}
	var d slashcmd.Definition
	require.NoError(t, json.Unmarshal([]byte(*r.StaticDef), &d))
	return &d
}

// asRow is the effective row the table row records.
func (r tableRow) asRow(t *testing.T) slashcmd.Row {
	t.Helper()
	row := slashcmd.Row{Key: r.Name, Name: r.Name, Description: r.Description, Source: r.Source, Owner: r.Owner,
		Version: r.Version, UpdatedAt: r.UpdatedAt.UTC().Format("2006-01-02T15:04:05.000Z")}
	if r.Arguments != nil {
		require.NoError(t, json.Unmarshal([]byte(*r.Arguments), &row.Arguments))
	}
	if len(r.DynamicLayers) > 0 {
		row.DynamicLayers = r.DynamicLayers
	}
	return row
}

// materialize applies the slash_command events of msgs the way StreamDB does: an
// insert or update replaces the row (every event carries the complete row), a delete
// removes it. Other event types are skipped.
func materialize(t *testing.T, msgs [][]byte) []slashcmd.Row {
	t.Helper()
	rows := map[string]slashcmd.Row{}
	for _, m := range msgs {
		var probe struct {
			Type    string            `json:"type"`
			Headers map[string]string `json:"headers"`
		}
		require.NoError(t, json.Unmarshal(m, &probe))
		if probe.Type != slashcmd.EventType {
			continue
		}
		ev := decodeEvent(t, m)
		switch ev.Op {
		case "insert":
			_, exists := rows[ev.Key]
			require.False(t, exists, "insert of a key that exists: %s", m)
			rows[ev.Key] = *ev.Value
		case "update":
			_, exists := rows[ev.Key]
			require.True(t, exists, "update of a key that does not exist: %s", m)
			rows[ev.Key] = *ev.Value
		case "delete":
			_, exists := rows[ev.Key]
			require.True(t, exists, "delete of a key that does not exist: %s", m)
			delete(rows, ev.Key)
		}
	}
	out := []slashcmd.Row{}
	for _, r := range rows {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// consistent checks that the table, both streams replayed from the start, List and
// Snapshot all show the same rows, and that Snapshot's offset is the collection's tail.
// It returns the rows.
func (e *storeEnv) consistent(url string) []slashcmd.Row {
	e.t.Helper()
	fromTable := []slashcmd.Row{}
	for _, r := range e.table(url) {
		fromTable = append(fromTable, r.asRow(e.t))
	}
	mainMsgs, _, _ := e.readAll(url+"/main", streamdb.Start)
	collMsgs, collTail, _ := e.readAll(entitypath.Collection(url), streamdb.Start)
	require.Equal(e.t, fromTable, materialize(e.t, mainMsgs), "the main stream materializes the table")
	require.Equal(e.t, fromTable, materialize(e.t, collMsgs), "the collection stream materializes the table")
	list, err := e.svc.List(e.ctx, url)
	require.NoError(e.t, err)
	require.Equal(e.t, fromTable, append([]slashcmd.Row{}, list...))
	snap, tail, err := e.svc.Snapshot(e.ctx, url)
	require.NoError(e.t, err)
	require.Equal(e.t, fromTable, append([]slashcmd.Row{}, snap...))
	require.Equal(e.t, collTail, tail, "the snapshot is at the collection's tail")
	return fromTable
}

func xmins(rows []tableRow) map[string]string {
	out := map[string]string{}
	for _, r := range rows {
		out[r.Name] = r.Xmin
	}
	return out
}

func owners(layers []slashcmd.Layer) []string {
	out := []string{}
	for _, l := range layers {
		out = append(out, l.Owner)
	}
	return out
}

const scenarioCommands = `[{"name":"review","description":"Review the change"},{"name":"help","description":"Show help"}]`

func TestStoreLayerScenario(t *testing.T) {
	e := newStoreEnv(t)
	ty := e.registerType("chat", scenarioCommands)
	url := e.spawn(ty, "one")
	review, help := sp("Review the change"), sp("Show help")

	// Spawn: entity_created, then one insert per static command on the main stream; the
	// same inserts (and nothing else) on the collection stream.
	main := e.newEvents(url + "/main")
	require.Len(t, main, 3)
	require.Contains(t, string(main[0]), `"type":"entity_created"`)
	coll := e.newEvents(entitypath.Collection(url))
	require.Equal(t, asStrings(main[1:]), asStrings(coll))
	seedReview, seedHelp := decodeEvent(t, coll[0]), decodeEvent(t, coll[1])
	spawned := seedReview.Value.UpdatedAt
	require.Equal(t, spawned, seedHelp.Value.UpdatedAt, "one stamp for the whole spawn")
	require.Equal(t, ins(staticRow("review", review, spawned)), change{seedReview.Key, seedReview.Op, seedReview.Value})
	require.Equal(t, ins(staticRow("help", help, spawned)), change{seedHelp.Key, seedHelp.Op, seedHelp.Value})
	require.Empty(t, seedReview.Txid, "seeded events carry no txid")
	rows := e.consistent(url)
	require.Equal(t, []slashcmd.Row{*staticRow("help", help, spawned), *staticRow("review", review, spawned)}, rows)
	table := e.table(url)
	require.Equal(t, &slashcmd.Definition{Name: "review", Description: review}, table[1].staticDef(t))
	require.Empty(t, table[1].DynamicLayers)

	cmds := e.svc.For(url)
	localDesc, skillsDesc, searchDesc := sp("Review with local rules"), sp("Review with a skill"), sp("Search the skills")

	// register local
	require.NoError(t, cmds.Register(e.ctx, reg("review", "local", localDesc)))
	evs := e.newCommandEvents(url)
	require.Len(t, evs, 1)
	local := layer("review", "local", localDesc, evs[0].Value.UpdatedAt)
	requireWrite(t, evs, upd(dynRow(local)))
	e.consistent(url)
	table = e.table(url)
	require.Equal(t, "dynamic", table[1].Source)
	require.Equal(t, "local", *table[1].Owner)
	require.Equal(t, []slashcmd.Layer{local}, table[1].DynamicLayers)
	require.Equal(t, &slashcmd.Definition{Name: "review", Description: review}, table[1].staticDef(t), "the static stays below")

	// register skills: on top of local
	res, err := e.svc.Apply(e.ctx, url, func(s *slashcmd.Set) error { return s.Register(reg("review", "skills", skillsDesc)) })
	require.NoError(t, err)
	evs = e.newCommandEvents(url)
	require.Len(t, evs, 1)
	skills := layer("review", "skills", skillsDesc, evs[0].Value.UpdatedAt)
	txid := requireWrite(t, evs, upd(dynRow(local, skills)))
	require.Equal(t, txid, res.Txid, "the result names the events' txid")
	require.Equal(t, []change{upd(dynRow(local, skills))}, simplify(res.Changes))
	require.Equal(t, e.consistent(url), res.Rows)
	require.Equal(t, []string{"local", "skills"}, owners(e.table(url)[1].DynamicLayers))

	// skills owns search too
	require.NoError(t, cmds.Register(e.ctx, reg("search", "skills", searchDesc)))
	evs = e.newCommandEvents(url)
	require.Len(t, evs, 1)
	requireWrite(t, evs, ins(dynRow(layer("search", "skills", searchDesc, evs[0].Value.UpdatedAt))))
	e.consistent(url)
	table = e.table(url)
	require.Len(t, table, 3)
	require.Nil(t, table[2].StaticDef, "search has no static command")

	// Registering exactly the top layer again writes nothing: no event, no row written.
	before := xmins(e.table(url))
	require.NoError(t, cmds.Register(e.ctx, reg("search", "skills", searchDesc)))
	require.NoError(t, cmds.ReplaceOwned(e.ctx, "skills", []slashcmd.Registration{reg("review", "", skillsDesc), reg("search", "", searchDesc)}))
	res, err = e.svc.Apply(e.ctx, url, func(s *slashcmd.Set) error { return s.Register(reg("review", "skills", skillsDesc)) })
	require.NoError(t, err)
	require.Empty(t, res.Changes)
	require.Empty(t, res.Txid)
	require.Empty(t, e.newCommandEvents(url))
	require.Equal(t, before, xmins(e.table(url)), "no row of the table was written")

	// replaceOwned(skills, [review]) deletes search, the name it owned.
	require.NoError(t, cmds.ReplaceOwned(e.ctx, "skills", []slashcmd.Registration{reg("review", "", skillsDesc)}))
	requireWrite(t, e.newCommandEvents(url), del("search"))
	e.consistent(url)
	require.Len(t, e.table(url), 2)

	// unregister skills reveals local, with local's own stamp.
	require.NoError(t, cmds.Unregister(e.ctx, "review", "skills"))
	requireWrite(t, e.newCommandEvents(url), upd(dynRow(local)))
	e.consistent(url)

	// unregister local reveals static: owner, version and dynamic_layers are null.
	require.NoError(t, cmds.Unregister(e.ctx, "review", "local"))
	evs = e.newCommandEvents(url)
	require.Len(t, evs, 1)
	requireWrite(t, evs, upd(staticRow("review", review, evs[0].Value.UpdatedAt)))
	require.Contains(t, string(evs[0].Raw), `"owner":null`)
	require.Contains(t, string(evs[0].Raw), `"dynamic_layers":null`)
	require.Greater(t, evs[0].Value.UpdatedAt, spawned, "a revealed static is restamped")
	rows = e.consistent(url)
	require.Equal(t, []slashcmd.Row{*staticRow("help", help, spawned), *staticRow("review", review, evs[0].Value.UpdatedAt)}, rows)
	table = e.table(url)
	require.Equal(t, "static", table[1].Source)
	require.Nil(t, table[1].Owner)
	require.Empty(t, table[1].DynamicLayers)

	// Static commands cannot be unregistered; nothing is written.
	before = xmins(e.table(url))
	require.NoError(t, cmds.Unregister(e.ctx, "review", ""))
	require.NoError(t, cmds.Unregister(e.ctx, "help", "local"))
	require.NoError(t, cmds.Unregister(e.ctx, "nothing", ""))
	require.Empty(t, e.newCommandEvents(url))
	require.Equal(t, before, xmins(e.table(url)))

	got, ok, err := cmds.Get(e.ctx, "help")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, *staticRow("help", help, spawned), got)
	_, ok, err = cmds.Get(e.ctx, "search")
	require.NoError(t, err)
	require.False(t, ok)
}

// A static definition must come back from the table as it went in, or the next change
// of any other command would find it "changed" and rewrite it.
func TestStoreStaticDefinitionsRoundTrip(t *testing.T) {
	e := newStoreEnv(t)
	ty := e.registerType("rt", `[
		{"name":"empty-args","description":"no arguments","arguments":[]},
		{"name":"empty-desc","description":""},
		{"name":"bare"},
		{"name":"full","description":"d","arguments":[{"name":"n","type":"number","required":true,"description":"N"},{"name":"flag","type":"boolean","required":false},{"name":"s","type":"string"}]}
	]`)
	url := e.spawn(ty, "one")
	e.seed(url)
	rows := e.consistent(url)
	require.Len(t, rows, 4)
	require.Equal(t, []slashcmd.Argument{}, rows[1].Arguments, "empty-args keeps its empty list")
	require.Equal(t, sp(""), rows[2].Description)

	// An unrelated registration writes only its own event and row.
	before := xmins(e.table(url))
	require.NoError(t, e.svc.For(url).Register(e.ctx, reg("other", "o", nil)))
	evs := e.newCommandEvents(url)
	require.Len(t, evs, 1, "events: %v", eventStrings(evs))
	require.Equal(t, "other", evs[0].Key)
	after := xmins(e.table(url))
	delete(after, "other")
	require.Equal(t, before, after)
	require.Equal(t, rows, e.consistent(url)[:4])

	// Re-registering the type unchanged changes nothing either.
	e.registerType("rt", string(ty.SlashCommands))
	require.Empty(t, e.newCommandEvents(url))
	e.consistent(url)
}

func TestStoreReconcileStaticCommands(t *testing.T) {
	e := newStoreEnv(t)
	ty := e.registerType("bot", `[{"name":"keep","description":"Keep"},{"name":"change","description":"Before"},{"name":"drop","description":"Drop"}]`)
	live, dead := e.spawn(ty, "live"), e.spawn(ty, "dead")
	e.seed(live)
	e.seed(dead)
	spawned := e.consistent(live)[0].UpdatedAt

	// A dynamic layer over "change" on the live entity; then dead is killed.
	require.NoError(t, e.svc.For(live).Register(e.ctx, reg("change", "dyn", sp("Dynamic"))))
	evs := e.newCommandEvents(live)
	require.Len(t, evs, 1)
	dyn := layer("change", "dyn", sp("Dynamic"), evs[0].Value.UpdatedAt)
	e.kill(dead)
	e.newEvents(dead + "/main")
	require.Empty(t, e.newEvents(entitypath.Collection(dead)), "closing a stream appends no message")
	_, _, closed := e.readAll(entitypath.Collection(dead), streamdb.Start)
	require.True(t, closed, "killing the entity closes its collection stream")
	deadTable := e.table(dead)
	liveKeep := xmins(e.table(live))["keep"]

	// The type changes: change gets a new description, drop goes, add comes.
	args := []slashcmd.Argument{{Name: "what", Type: "string"}}
	ty2 := e.registerType("bot", `[{"name":"add","description":"Added","arguments":[{"name":"what","type":"string"}]},{"name":"keep","description":"Keep"},{"name":"change","description":"After"}]`)
	require.Equal(t, 2, ty2.Revision)

	evs = e.newCommandEvents(live)
	require.Len(t, evs, 2)
	addRow := staticRow("add", sp("Added"), evs[0].Value.UpdatedAt)
	addRow.Arguments = args
	requireWrite(t, evs, ins(addRow), del("drop"))
	rows := e.consistent(live)
	require.Equal(t, []slashcmd.Row{*addRow, *dynRow(dyn), *staticRow("keep", sp("Keep"), spawned)}, rows,
		"change keeps its dynamic layer on top; keep keeps its stamp")
	table := e.table(live)
	require.Equal(t, &slashcmd.Definition{Name: "change", Description: sp("After")}, table[1].staticDef(t),
		"the static below the layer is the new one")
	require.Equal(t, []slashcmd.Layer{dyn}, table[1].DynamicLayers)
	require.Equal(t, liveKeep, table[2].Xmin, "an unchanged static row is not written")
	var revision int
	require.NoError(t, e.pool.QueryRow(e.ctx, `SELECT commands_revision FROM entities WHERE url = $1`, live).Scan(&revision))
	require.Equal(t, 2, revision)

	// Removing the layer reveals the new static definition.
	require.NoError(t, e.svc.For(live).Unregister(e.ctx, "change", ""))
	evs = e.newCommandEvents(live)
	require.Len(t, evs, 1)
	requireWrite(t, evs, upd(staticRow("change", sp("After"), evs[0].Value.UpdatedAt)))
	e.consistent(live)

	// The killed entity is left as it was.
	require.Equal(t, deadTable, e.table(dead))
	require.Empty(t, e.newEvents(dead+"/main"))
	require.Empty(t, e.newEvents(entitypath.Collection(dead)))
	require.NoError(t, e.pool.QueryRow(e.ctx, `SELECT commands_revision FROM entities WHERE url = $1`, dead).Scan(&revision))
	require.Equal(t, 1, revision)

	// Registering the same commands again (a new revision) writes nothing.
	before := xmins(e.table(live))
	e.registerType("bot", string(ty2.SlashCommands))
	require.Empty(t, e.newCommandEvents(live))
	require.Equal(t, before, xmins(e.table(live)))

	// A type without commands removes the static rows; dynamic ones stay.
	require.NoError(t, e.svc.For(live).Register(e.ctx, reg("keep", "dyn", nil)))
	e.newCommandEvents(live)
	e.registerType("bot", "")
	evs = e.newCommandEvents(live)
	requireWrite(t, evs, del("add"), del("change"))
	rows = e.consistent(live)
	require.Len(t, rows, 1)
	require.Equal(t, "dynamic", rows[0].Source)
	require.Nil(t, e.table(live)[0].StaticDef)

	// New entities are seeded with the type's current commands.
	fresh := e.spawn(e.registerType("bot", ""), "fresh")
	require.Empty(t, e.consistent(fresh))
}

func TestStoreRefusalsWriteNothing(t *testing.T) {
	e := newStoreEnv(t)
	ty := e.registerType("chat", scenarioCommands)
	url := e.spawn(ty, "one")
	e.seed(url)
	require.NoError(t, e.svc.For(url).Register(e.ctx, reg("mine", "me", nil)))
	e.newCommandEvents(url)
	table := e.table(url)

	// Invalid definitions.
	var invalid *slashcmd.InvalidError
	require.ErrorAs(t, e.svc.For(url).Register(e.ctx, reg("Bad", "me", nil)), &invalid)
	require.Equal(t, "/name", invalid.Details[0].Path)
	require.ErrorAs(t, e.svc.For(url).ReplaceOwned(e.ctx, "me", []slashcmd.Registration{reg("fine", "", nil), reg("Bad", "", nil)}), &invalid)
	require.Equal(t, "/1/name", invalid.Details[0].Path)

	// A callback error rolls back what the Set did.
	boom := errors.New("boom")
	_, err := e.svc.Apply(e.ctx, url, func(s *slashcmd.Set) error {
		require.NoError(t, s.Register(reg("new", "me", nil)))
		s.Unregister("mine", "")
		return boom
	})
	require.ErrorIs(t, err, boom)

	// Too many commands.
	small := slashdb.NewService(e.streams, slashcmd.Limits{MaxCommands: 3})
	require.ErrorIs(t, small.For(url).Register(e.ctx, reg("fourth", "me", nil)), slashcmd.ErrTooManyCommands)

	require.Empty(t, e.newCommandEvents(url))
	require.Equal(t, table, e.table(url))

	// No such entity: nothing is left in the table.
	require.ErrorIs(t, e.svc.For("/chat/ghost").Register(e.ctx, reg("x", "", nil)), slashdb.ErrEntityNotFound)
	require.Empty(t, e.table("/chat/ghost"))
	_, _, err = e.svc.Snapshot(e.ctx, "/chat/ghost")
	require.ErrorIs(t, err, slashdb.ErrEntityNotFound)

	// A killed entity's streams are closed: ErrEntityClosed and nothing written.
	e.kill(url)
	e.newEvents(url + "/main")
	require.ErrorIs(t, e.svc.For(url).Register(e.ctx, reg("late", "me", nil)), slashdb.ErrEntityClosed)
	require.ErrorIs(t, e.svc.For(url).Unregister(e.ctx, "mine", ""), slashdb.ErrEntityClosed)
	require.Empty(t, e.newCommandEvents(url))
	require.Equal(t, table, e.table(url))
	// An operation that changes nothing still succeeds, and reads keep working.
	require.NoError(t, e.svc.For(url).Register(e.ctx, reg("mine", "me", nil)))
	e.consistent(url)
}

func TestStoreSnapshotFollowedByTheTail(t *testing.T) {
	e := newStoreEnv(t)
	ty := e.registerType("chat", scenarioCommands)
	url := e.spawn(ty, "one")
	require.NoError(t, e.svc.For(url).Register(e.ctx, reg("review", "a", sp("A"))))

	snap, tail, err := e.svc.Snapshot(e.ctx, url)
	require.NoError(t, err)
	require.Equal(t, e.consistent(url), snap)

	// The snapshot rendered as events: markers at the tail, one full insert per row.
	events := slashdb.SnapshotEvents(snap, tail)
	require.Len(t, events, len(snap)+2)
	require.JSONEq(t, `{"headers":{"control":"snapshot-start","offset":"`+tail.String()+`"}}`, string(events[0]))
	require.JSONEq(t, `{"headers":{"control":"snapshot-end","offset":"`+tail.String()+`"}}`, string(events[len(events)-1]))
	require.Equal(t, snap, materialize(t, events[1:len(events)-1]))
	for _, ev := range events[1 : len(events)-1] {
		require.Equal(t, map[string]string{"operation": "insert"}, decodeEvent(t, ev).Headers)
	}

	// Applying the collection's events after the snapshot's tail gives the new rows.
	require.NoError(t, e.svc.For(url).Register(e.ctx, reg("review", "b", sp("B"))))
	require.NoError(t, e.svc.For(url).Register(e.ctx, reg("extra", "b", nil)))
	require.NoError(t, e.svc.For(url).Unregister(e.ctx, "review", "a"))
	later, _, _ := e.readAll(entitypath.Collection(url), tail)
	require.Len(t, later, 3)
	require.Equal(t, e.consistent(url), materialize(t, append(events[1:len(events)-1], later...)))
}

// Concurrent registrations on one entity must not lose each other's layers, also for a
// name that has no row yet.
func TestStoreConcurrentRegistrations(t *testing.T) {
	e := newStoreEnv(t)
	ty := e.registerType("chat", `[{"name":"review"}]`)
	url := e.spawn(ty, "one")
	const writers = 4
	for round := 0; round < 5; round++ {
		names := []string{"review", fmt.Sprintf("new-%d", round)}
		var wg sync.WaitGroup
		errs := make(chan error, writers*len(names))
		for w := 0; w < writers; w++ {
			for _, name := range names {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- e.svc.For(url).Register(e.ctx, reg(name, fmt.Sprintf("owner-%d-%d", round, w), nil))
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		e.consistent(url)
		byName := map[string]tableRow{}
		for _, r := range e.table(url) {
			byName[r.Name] = r
		}
		prefix := fmt.Sprintf("owner-%d-", round)
		want := []string{}
		for w := 0; w < writers; w++ {
			want = append(want, fmt.Sprintf("%s%d", prefix, w))
		}
		for _, name := range names {
			got := []string{}
			for _, o := range owners(byName[name].DynamicLayers) {
				if strings.HasPrefix(o, prefix) {
					got = append(got, o)
				}
			}
			require.ElementsMatch(t, want, got, "round %d, %s: every writer's layer is kept", round, name)
		}
	}
}
