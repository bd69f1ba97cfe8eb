package entity

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/entityd/entityd/internal/coalesce"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/slashcmd"
	"github.com/entityd/entityd/slashcmd/slashdb"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
)

// Entity is a spawned entity.
type Entity struct {
	URL          string
	Type         string
	InstanceID   string
	Status       Status
	StreamID     int64
	Tags         map[string]string
	SpawnArgs    json.RawMessage
	Parent       *string
	CreatedBy    *string
	TypeRevision int
	InboxSchemas json.RawMessage
	StateSchemas json.RawMessage
	CreatedAt    time.Time
	UpdatedAt    time.Time
	// WriteToken authorises direct writes to the entity's stream; never shown publicly.
	WriteToken string

	inbox compiledSchemas
	state compiledSchemas
}

// MainStream is the path of the entity's stream.
func (e *Entity) MainStream() string { return entitypath.Main(e.URL) }

// Terminal reports whether the entity can no longer change status.
func (e *Entity) Terminal() bool { return e.Status.Terminal() }

// MarshalJSON renders the public entity JSON; the write token is never included.
func (e *Entity) MarshalJSON() ([]byte, error) { return e.JSONObject().Bytes(), nil }

// JSONObject is the public entity JSON, open for the caller to add members (a txid).
func (e *Entity) JSONObject() *rawjson.Object {
	o := &rawjson.Object{}
	o.String("url", e.URL).String("type", e.Type).String("status", string(e.Status))
	var streams rawjson.Object
	streams.String("main", e.MainStream())
	o.Raw("streams", streams.Bytes())
	tags := e.Tags
	if tags == nil {
		tags = map[string]string{}
	}
	o.Value("tags", tags)
	if e.SpawnArgs != nil {
		o.Raw("spawn_args", e.SpawnArgs)
	}
	if e.Parent != nil {
		o.String("parent", *e.Parent)
	}
	if e.CreatedBy != nil {
		o.String("created_by", *e.CreatedBy)
	}
	o.Int("created_at", e.CreatedAt.UnixMilli()).Int("updated_at", e.UpdatedAt.UnixMilli())
	return o
}

// scanEntity reads the columns of the "entityColumns" fragment (queries/entities.sql), in order.
func scanEntity(row pgx.Row) (*Entity, error) {
	e := &Entity{}
	var args, is, ss []byte
	err := row.Scan(&e.URL, &e.Type, &e.InstanceID, &e.Status, &e.StreamID, &e.Tags, &args, &e.Parent,
		&e.CreatedBy, &e.TypeRevision, &is, &ss, &e.CreatedAt, &e.UpdatedAt, &e.WriteToken)
	if err != nil {
		return nil, err
	}
	e.SpawnArgs, e.InboxSchemas, e.StateSchemas = raw(args), raw(is), raw(ss)
	return e, nil
}

// SpawnRequest describes an entity to create.
type SpawnRequest struct {
	Type       string
	InstanceID string
	Args       json.RawMessage // nil when absent
	Tags       map[string]string
	Parent     string
	CreatedBy  string
	// Initial are extra events appended after the seeded ones in the same transaction
	// (the initial message, already validated by the caller).
	Initial [][]byte
	// InTx, when set, runs in the spawn's transaction after the entity row is written
	// (a wake registration on the new entity commits with it).
	InTx func(ctx context.Context, tx *streamdb.Tx, e *Entity) error
}

// SpawnResult is the spawned entity and the Postgres transaction id that created it.
type SpawnResult struct {
	Entity *Entity
	Txid   int64
}

// CheckArgs validates spawn args against the type's creation schema. Absent args are
// validated as {} so that a schema with required properties refuses a spawn without
// args (the reference skips the check when args are absent).
func (r *Registry) CheckArgs(t *Type, args json.RawMessage) error {
	if t.CreationSchema == nil {
		return nil
	}
	s, err := r.schemas.Get(t.CreationSchema)
	if err != nil {
		return fmt.Errorf("entity: compile creation schema of %s: %w", t.Name, err)
	}
	if args == nil {
		args = json.RawMessage(`{}`)
	}
	if d := s.Validate(args); d != nil {
		return &ValidationError{Message: "Validation failed", Details: d, Semantic: true}
	}
	return nil
}

// Spawn creates an entity and its stream in one transaction. The stream starts with the
// entity_created event, one slash_command insert per static command of the type, and
// req.Initial. Everything is checked before anything is written.
func (r *Registry) Spawn(ctx context.Context, t *Type, req SpawnRequest) (*SpawnResult, error) {
	if err := r.CheckArgs(t, req.Args); err != nil {
		return nil, err
	}
	// Stored compact, so every view of the entity (GET, list, entity_created) shows the
	// same bytes whatever whitespace the request had.
	if req.Args != nil {
		var buf bytes.Buffer
		if err := json.Compact(&buf, req.Args); err == nil {
			req.Args = buf.Bytes()
		}
	}
	defs, err := slashcmd.ParseDefinitions(t.SlashCommands)
	if err != nil {
		return nil, fmt.Errorf("entity: static slash commands of %s: %w", t.Name, err)
	}
	url := entitypath.URL(req.Type, req.InstanceID)
	now := time.Now()
	var token [24]byte
	_, _ = rand.Read(token[:])
	tags := req.Tags
	if tags == nil {
		tags = map[string]string{}
	}
	var parent, createdBy *string
	if req.Parent != "" {
		parent = &req.Parent
	}
	if req.CreatedBy != "" {
		createdBy = &req.CreatedBy
	}

	var out SpawnResult
	var after func()
	err = r.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		after = nil
		if parent != nil {
			var one int
			err := tx.QueryRow(ctx, sqlEntityExists, *parent).Scan(&one)
			if errors.Is(err, pgx.ErrNoRows) {
				return ErrParentNotFound
			}
			if err != nil {
				return err
			}
		}
		commandEvents := slashdb.StaticEvents(defs, now)
		events := append([][]byte{createdEvent(t.Name, req.Args, parent, now)}, commandEvents...)
		events = append(events, req.Initial...)
		m, created, err := tx.Create(ctx, entitypath.Main(url), streamdb.CreateConfig{ContentType: "application/json",
			Access: streamdb.Access{Kind: streamdb.AccessEntity, Entity: url}}, events)
		if err != nil {
			if isUniqueViolation(err) {
				return ErrDuplicate
			}
			return err
		}
		if !created {
			return ErrDuplicate
		}
		if err := slashdb.SeedStatic(ctx, tx, url, defs, commandEvents, now); err != nil {
			return err
		}
		e, err := scanEntity(tx.QueryRow(ctx, sqlInsertEntity,
			url, req.Type, req.InstanceID, m.ID, hex.EncodeToString(token[:]), tags, nullable(req.Args),
			parent, createdBy, t.Revision, nullable(t.InboxSchemas), nullable(t.StateSchemas), string(StatusIdle),
			nullable(t.DefaultDispatchPolicy)))
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrDuplicate
		}
		if err != nil {
			return err
		}
		// (wake's delivery row comes with the entity row: migration 013's trigger)
		out.Entity = e
		if req.InTx != nil {
			if err := req.InTx(ctx, tx, e); err != nil {
				return err
			}
		}
		if r.onSpawn != nil {
			if after, err = r.onSpawn(ctx, tx, e, t); err != nil {
				return err
			}
		}
		out.Txid, err = currentTxid(ctx, tx)
		return err
	})
	if err != nil {
		if isUniqueViolation(err) {
			return nil, ErrDuplicate
		}
		return nil, err
	}
	r.known.put(out.Entity)
	if after != nil {
		after()
	}
	return &out, nil
}

func createdEvent(typ string, args json.RawMessage, parent *string, now time.Time) []byte {
	var v rawjson.Object
	v.String("entity_type", typ).Time("timestamp", now)
	if args != nil {
		v.Raw("args", args)
	} else {
		v.Raw("args", []byte("{}"))
	}
	if parent != nil {
		v.String("parent_url", *parent)
	}
	return wire.Event{Type: "entity_created", Key: "entity-created", Value: v.Bytes(),
		Operation: wire.OpInsert, Timestamp: now}.Marshal()
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// Get reads an entity from the database.
func (r *Registry) Get(ctx context.Context, url string) (*Entity, error) {
	e, err := scanEntity(r.pool.QueryRow(ctx, sqlSelectEntity, url))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("entity: read entity: %w", err)
	}
	r.known.put(e)
	return e, nil
}

// Current is Get for a hot path that many requests take at once (every webhook wake
// reads its entity's status and tags): concurrent calls share one statement. What it
// returns is as fresh as Get's: the statement starts after the call.
func (r *Registry) Current(ctx context.Context, url string) (*Entity, error) {
	e, err := r.current.Do(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("entity: read entity: %w", err)
	}
	if e == nil {
		return nil, ErrNotFound
	}
	return e, nil
}

// readMany reads the entities urls name, in one statement (nil for one that does not
// exist), for Current.
func (r *Registry) readMany(ctx context.Context, urls []string) ([]*Entity, error) {
	rows, err := r.pool.Query(ctx, sqlSelectEntities, urls)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byURL := make(map[string]*Entity, len(urls))
	for rows.Next() {
		e, err := scanEntity(rows)
		if err != nil {
			return nil, err
		}
		r.known.put(e)
		byURL[e.URL] = e
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return coalesce.InOrder(urls, byURL), nil
}

// Known returns an entity for the send path: from memory when it was seen before. Its
// Status may be stale; see entityCache.
func (r *Registry) Known(ctx context.Context, url string) (*Entity, error) {
	if e := r.known.get(url); e != nil {
		return e, nil
	}
	return r.Get(ctx, url)
}

// KnownMany is Known for many entities at once: those not in memory are read in one
// query. Entities that do not exist are absent from the map.
func (r *Registry) KnownMany(ctx context.Context, urls []string) (map[string]*Entity, error) {
	out := make(map[string]*Entity, len(urls))
	var missing []string
	for _, u := range urls {
		if e := r.known.get(u); e != nil {
			out[u] = e
		} else {
			missing = append(missing, u)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	rows, err := r.pool.Query(ctx, sqlSelectEntities, missing)
	if err != nil {
		return nil, fmt.Errorf("entity: read entities: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		e, err := scanEntity(rows)
		if err != nil {
			return nil, err
		}
		r.known.put(e)
		out[e.URL] = e
	}
	return out, rows.Err()
}

// ByStream finds the entity whose main stream is path (nil, nil when none).
func (r *Registry) ByStream(ctx context.Context, path string) (*Entity, error) {
	url, ok := entitypath.OfMain(path)
	if !ok {
		return nil, nil
	}
	e, err := r.Known(ctx, url)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return e, err
}

// Filter selects entities in List.
type Filter struct {
	Type, Status, Parent string
	// CreatedBy keeps the entities created by this principal URL.
	CreatedBy string
	// Tags, when set, keeps the entities carrying every one of these tags.
	Tags map[string]string
	// Limit is the page size (at most MaxListLimit, which is also the default).
	Limit int
	// After continues a listing after the entity with this URL (a page's last row).
	After string
}

// MaxListLimit is the largest page List returns.
const MaxListLimit = 10000

// ErrCursorGone is List's answer when After names an entity that no longer exists.
var ErrCursorGone = errors.New("entity: the list cursor names an entity that no longer exists")

// List returns entities matching f, oldest first (by creation time, then URL), one page
// of at most f.Limit; a page continues after the f.After entity's place in that order.
func (r *Registry) List(ctx context.Context, f Filter) ([]*Entity, error) {
	var where []string
	var args []any
	add := func(col, v string) {
		if v != "" {
			args = append(args, v)
			where = append(where, fmt.Sprintf("%s = $%d", col, len(args)))
		}
	}
	add("type", f.Type)
	add("status", f.Status)
	add("parent", f.Parent)
	add("created_by", f.CreatedBy)
	if len(f.Tags) > 0 {
		tags, err := json.Marshal(f.Tags)
		if err != nil {
			return nil, err
		}
		args = append(args, string(tags))
		where = append(where, fmt.Sprintf("tags @> $%d::jsonb", len(args)))
	}
	if f.After != "" {
		var created time.Time
		err := r.pool.QueryRow(ctx, sqlEntityCreatedAt, f.After).Scan(&created)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, ErrCursorGone
		}
		if err != nil {
			return nil, fmt.Errorf("entity: list cursor: %w", err)
		}
		args = append(args, created, f.After)
		where = append(where, fmt.Sprintf("(created_at, url) > ($%d, $%d)", len(args)-1, len(args)))
	}
	q := sqlListEntities
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	limit := f.Limit
	if limit <= 0 || limit > MaxListLimit {
		limit = MaxListLimit
	}
	q += fmt.Sprintf(` ORDER BY created_at, url LIMIT %d`, limit)
	rows, err := r.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("entity: list entities: %w", err)
	}
	defer rows.Close()
	out := []*Entity{}
	for rows.Next() {
		e, err := scanEntity(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// SendAdmission refuses appends to an entity that does not accept writes (stopping,
// stopped, killed) and admits those to a paused entity with the note StatusPaused,
// inside the append transaction. The request's Subject.Key is the entity URL.
var SendAdmission = &streamdb.Admission{
	SQL: sqlSendAdmission, // one primary-key lookup per target; see queries/entities.sql
	Judge: func(status string) streamdb.Verdict {
		if status == forkingStatus {
			return streamdb.Refused(ErrForkInProgress)
		}
		if Status(status).AcceptsWrites() {
			return streamdb.Admitted(status) // paused: the send may resume it (UnpauseOnAdmit)
		}
		return streamdb.Refused(ErrNotRunning)
	},
}

// FinishStop completes a graceful stop inside tx: a stopping entity becomes stopped. It
// reports whether the entity was stopping (else nothing changed).
func FinishStop(ctx context.Context, tx *streamdb.Tx, url string) (bool, error) {
	tag, err := tx.Exec(ctx, sqlFinishStop,
		url, string(StatusStopped), string(StatusStopping))
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() > 0, nil
}

// SendTo is the append request of one send's event to the entity at url.
func SendTo(url string, event []byte) *streamdb.AppendRequest {
	return &streamdb.AppendRequest{Path: entitypath.Main(url), Messages: [][]byte{event},
		Admission: SendAdmission, Subject: streamdb.Subject{Key: url}}
}

// UnpauseOnAdmit is the streamdb.AppendRequest.OnAdmit of a send with a mode other than
// paused: when SendAdmission found the entity paused, the send moves it back to idle in
// the append's own transaction (spec: such a send resumes a paused entity), so a crash
// can never leave a delivered message behind a paused entity.
func UnpauseOnAdmit(url string) func(note string) []streamdb.Statement {
	return func(note string) []streamdb.Statement {
		if Status(note) != StatusPaused {
			return nil
		}
		return []streamdb.Statement{{SQL: sqlUnpause, Args: []any{url, string(StatusIdle), string(StatusPaused)}}}
	}
}

// lockEntity reads the entity at url and locks its row for the rest of tx (ErrNotFound).
func lockEntity(ctx context.Context, tx *streamdb.Tx, url string) (*Entity, error) {
	e, err := scanEntity(tx.QueryRow(ctx, sqlLockEntity, url))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	return e, err
}

// currentTxid is the Postgres transaction id of tx, the txid the API reports for it.
func currentTxid(ctx context.Context, tx *streamdb.Tx) (int64, error) {
	var txid int64
	err := tx.QueryRow(ctx, sqlCurrentTxid).Scan(&txid)
	return txid, err
}
