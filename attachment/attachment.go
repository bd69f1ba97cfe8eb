// Package attachment keeps the files uploaded to entities (Electric's attachments).
// An attachment's bytes are a closed binary stream <entity url>/attachments/<id>,
// recorded as the entity's (streamdb.AccessEntity), so that reading it over Durable
// Streams asks the entity's one access decision; a row of the attachments table holds
// what serving it needs (type, name, size, digest) and what the per-principal quotas
// count; and a manifest entry (type "manifest", key "attachment:<id>") in the entity's
// main stream is what Electric's runtime and UI read. The three are written in one
// transaction, so none exists without the others.
package attachment

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/streamdb"
	"github.com/entityd/entityd/wire"
)

// Errors of the service.
var (
	ErrExists   = errors.New("attachment: an attachment with this id exists")
	ErrNotFound = errors.New("attachment: not found")
)

// appendChunks is how many chunks one append of an upload's transaction carries: the
// database driver copies an append's messages once more while it sends them, so this
// bounds that copy (4 MiB) whatever the file's size.
const appendChunks = 4

// Service stores and reads attachments.
type Service struct {
	streams *streamdb.Store
	now     func() time.Time
}

// New returns the service over streams.
func New(streams *streamdb.Store) *Service {
	return &Service{streams: streams, now: streams.Clock().Now}
}

// Upload is an upload to store.
type Upload struct {
	EntityURL string
	*Form
	// CreatedBy is the uploader's principal URL (the manifest entry's createdBy) and
	// Owner its "kind:id", which the quotas count.
	CreatedBy, Owner string
}

// Attachment is a stored attachment.
type Attachment struct {
	StreamPath string
	MimeType   string
	Filename   string
	ByteLength int64
	SHA256     string
	Entry      json.RawMessage
}

// Create stores u (an id is made when it has none) and returns the txid of the
// manifest entry and the entry. ErrExists when the entity has an attachment with that
// id; entity.ErrNotRunning when the entity does not accept writes.
func (s *Service) Create(ctx context.Context, u *Upload) (txid string, entry json.RawMessage, err error) {
	if u.ID == "" {
		u.ID = uuid.NewString()
	}
	path := StreamPath(u.EntityURL, u.ID)
	txid = uuid.NewString()
	now := s.now()
	entry = u.entry(path, now)
	err = s.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		var filename *string
		if u.Filename != "" {
			filename = &u.Filename
		}
		tag, err := tx.Exec(ctx, sqlInsertAttachment, u.EntityURL, u.ID, path, u.MimeType, filename, u.Size, u.SHA256,
			[]byte(entry), u.Owner)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrExists
		}
		if err := storeBytes(ctx, tx, path, u); err != nil {
			return err
		}
		ev := wire.Event{Type: "manifest", Key: ManifestKey(u.ID), Value: entry, Operation: wire.OpUpsert, Txid: txid,
			Timestamp: now}.Marshal()
		return appendToMain(ctx, tx, u.EntityURL, ev)
	})
	return txid, entry, err
}

// storeBytes creates the attachment's stream, closed, with its bytes.
func storeBytes(ctx context.Context, tx *streamdb.Tx, path string, u *Upload) error {
	ct := u.MimeType
	if streamdb.IsJSON(ct) {
		// a JSON stream is a sequence of JSON messages: the file is bytes, whatever it holds
		ct = "application/octet-stream"
	}
	_, created, err := tx.Create(ctx, path, streamdb.CreateConfig{ContentType: ct,
		Access: streamdb.Access{Kind: streamdb.AccessEntity, Entity: u.EntityURL}}, nil)
	if errors.Is(err, streamdb.ErrExists) || (err == nil && !created) {
		return ErrExists
	}
	if err != nil {
		return err
	}
	chunks := u.Chunks
	for {
		n := min(len(chunks), appendChunks)
		last := n == len(chunks)
		if _, err := tx.Append(ctx, &streamdb.AppendRequest{Path: path, Messages: chunks[:n], Close: last}); err != nil {
			return err
		}
		if last {
			return nil
		}
		chunks = chunks[n:]
	}
}

// appendToMain appends a manifest event to the entity's main stream if the entity
// accepts writes (the sends' admission, in this transaction).
func appendToMain(ctx context.Context, tx *streamdb.Tx, url string, ev []byte) error {
	_, err := tx.Append(ctx, &streamdb.AppendRequest{Path: entitypath.Main(url), Messages: [][]byte{ev},
		Admission: entity.SendAdmission, Subject: streamdb.Subject{Key: url}})
	var closed *streamdb.ClosedError
	if errors.As(err, &closed) {
		return entity.ErrNotRunning
	}
	return err
}

// ManifestKey is the key of attachment id's entry in the entity's manifest.
func ManifestKey(id string) string { return "attachment:" + id }

// entry is the manifest entry of u (the runtime's ManifestAttachmentEntry).
func (u *Upload) entry(path string, now time.Time) json.RawMessage {
	var subject rawjson.Object
	subject.String("type", u.Subject.Type).String("key", u.Subject.Key)
	var o rawjson.Object
	o.String("key", ManifestKey(u.ID)).String("kind", "attachment").String("id", u.ID).String("streamPath", path).
		String("status", "complete").Raw("subject", subject.Bytes()).String("role", u.Role).String("mimeType", u.MimeType)
	if u.Filename != "" {
		o.String("filename", u.Filename)
	}
	o.Int("byteLength", u.Size).String("sha256", u.SHA256).
		String("createdAt", now.UTC().Format("2006-01-02T15:04:05.000Z"))
	if u.CreatedBy != "" {
		o.String("createdBy", u.CreatedBy)
	}
	if u.Meta != nil {
		o.Raw("meta", u.Meta)
	}
	return o.Bytes()
}

// Get returns attachment id of the entity at url (ErrNotFound).
func (s *Service) Get(ctx context.Context, url, id string) (*Attachment, error) {
	var a Attachment
	var filename *string
	var entry []byte
	err := s.streams.DB().QueryRow(ctx, sqlGetAttachment, url, id).
		Scan(&a.StreamPath, &a.MimeType, &filename, &a.ByteLength, &a.SHA256, &entry)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if filename != nil {
		a.Filename = *filename
	}
	a.Entry = entry
	return &a, nil
}

// Open returns the stream that holds a's bytes (ErrNotFound when it is gone).
func (s *Service) Open(ctx context.Context, a *Attachment) (*streamdb.Meta, error) {
	m, err := s.streams.Lookup(ctx, a.StreamPath)
	if errors.Is(err, streamdb.ErrNotFound) || errors.Is(err, streamdb.ErrGone) {
		return nil, ErrNotFound
	}
	return m, err
}

// Delete deletes attachment id of the entity at url: its row, its stream and (a delete
// event) its manifest entry, and returns the event's txid. ErrNotFound;
// entity.ErrNotRunning when the entity does not accept writes.
func (s *Service) Delete(ctx context.Context, url, id string) (string, error) {
	txid := uuid.NewString()
	err := s.streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		var path string
		if err := tx.QueryRow(ctx, sqlDeleteAttachment, url, id).Scan(&path); errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		} else if err != nil {
			return err
		}
		ev := wire.Event{Type: "manifest", Key: ManifestKey(id), Operation: wire.OpDelete, Txid: txid,
			Timestamp: s.now()}.Marshal()
		if err := appendToMain(ctx, tx, url, ev); err != nil {
			return err
		}
		if err := tx.Delete(ctx, path, nil); err != nil && !errors.Is(err, streamdb.ErrNotFound) {
			return err
		}
		return nil
	})
	return txid, err
}

// Usage is how many attachments principal owner ("kind:id") uploaded, and their bytes.
func (s *Service) Usage(ctx context.Context, owner string) (count, bytes int64, err error) {
	err = s.streams.DB().QueryRow(ctx, sqlUsageBy, owner).Scan(&count, &bytes)
	return count, bytes, err
}
