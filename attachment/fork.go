package attachment

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/entityd/entityd/streamdb"
)

// ForkTx copies, in tx, the attachments of the entity at from to the entity at to (an
// entity fork): each becomes a zero-copy fork of its stream at to's attachment path,
// recorded as to's (so to's grants decide who reads it), with a row whose manifest entry
// names the new stream. keep, when not nil, says which ids to copy (those the fork's
// manifest has at its pointer); the quotas count the copies against their uploaders, as
// the originals. The manifest events themselves are the fork's main stream's business.
func ForkTx(ctx context.Context, tx *streamdb.Tx, from, to string, keep func(id string) bool) (int, error) {
	rows, err := tx.Query(ctx, sqlAttachmentsOf, from)
	if err != nil {
		return 0, err
	}
	type row struct {
		id, path, mime string
		filename       *string
		size           int64
		sha            string
		entry          []byte
		by             string
	}
	var all []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.path, &r.mime, &r.filename, &r.size, &r.sha, &r.entry, &r.by); err != nil {
			rows.Close()
			return 0, err
		}
		if keep == nil || keep(r.id) {
			all = append(all, r)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, r := range all {
		path := StreamPath(to, r.id)
		if _, _, err := tx.Create(ctx, path, streamdb.CreateConfig{ForkFrom: r.path,
			Access: streamdb.Access{Kind: streamdb.AccessEntity, Entity: to}}, nil); err != nil {
			return 0, fmt.Errorf("attachment: fork %s: %w", r.path, err)
		}
		entry, err := withStreamPath(r.entry, path)
		if err != nil {
			return 0, err
		}
		if _, err := tx.Exec(ctx, sqlInsertAttachment, to, r.id, path, r.mime, r.filename, r.size, r.sha, entry, r.by); err != nil {
			return 0, err
		}
	}
	return len(all), nil
}

// withStreamPath is a manifest entry with its streamPath replaced (the reference rewrites
// a fork's attachment entries the same way).
func withStreamPath(entry []byte, path string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(entry, &m); err != nil {
		return nil, err
	}
	p, _ := json.Marshal(path)
	m["streamPath"] = p
	return json.Marshal(m)
}
