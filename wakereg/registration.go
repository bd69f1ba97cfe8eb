package wakereg

import (
	"context"
	"strings"

	"github.com/entityd/entityd/internal/entitypath"
	"github.com/entityd/entityd/streamdb"
)

// Registration is a wake registration to store: a Spec, the stream the source is read
// from, and who made it.
type Registration struct {
	Spec
	// SourceStream is the stream read for SourceURL: an entity's main stream, or
	// SourceURL itself for a stream source.
	SourceStream string
	OneShot      bool
	CreatedBy    string
}

// EntitySource is the registration's source when SourceURL names an entity.
func EntitySource(url string) string { return entitypath.Main(url) }

// LooksLikeEntity reports whether url has an entity URL's shape (/<type>/<id>, not
// under a reserved /_ prefix); whether an entity is there is the caller's to check.
func LooksLikeEntity(url string) bool {
	rest, ok := strings.CutPrefix(url, "/")
	if !ok || strings.HasPrefix(rest, "_") {
		return false
	}
	typ, id, ok := strings.Cut(rest, "/")
	return ok && typ != "" && id != "" && !strings.Contains(id, "/")
}

func (r *Registration) insert() streamdb.Statement {
	return streamdb.Statement{SQL: sqlInsert, Args: []any{r.SubscriberURL, r.SourceURL, r.SourceStream,
		string(r.Condition.JSON()), r.DebounceMs, r.TimeoutMs, r.IncludeResponse, r.ManifestKey, r.OneShot, r.CreatedBy}}
}

// RegisterTx stores reg inside tx (a spawn's, so the child and the wake on it exist
// together). Call Service.Noted with it once tx has committed.
func RegisterTx(ctx context.Context, tx *streamdb.Tx, reg *Registration) error {
	st := reg.insert()
	_, err := tx.Exec(ctx, st.SQL, st.Args...)
	return err
}

// CopyForFork gives the copies of forked entities (urls: source URL → copy URL) the
// wake registrations their sources subscribe with, inside the fork's transaction;
// createdBy (when set) is counted as their creator.
func CopyForFork(ctx context.Context, tx *streamdb.Tx, urls map[string]string, createdBy string) error {
	from := make([]string, 0, len(urls))
	to := make([]string, 0, len(urls))
	for f, t := range urls {
		from, to = append(from, f), append(to, t)
	}
	_, err := tx.Exec(ctx, sqlCopyForFork, from, to, createdBy)
	return err
}

// RemoveEntityTx drops every registration the entity at url is the subscriber or the
// source of; it runs in the transaction that kills or stops the entity.
func RemoveEntityTx(ctx context.Context, tx *streamdb.Tx, url string) error {
	_, err := tx.Exec(ctx, sqlDeleteEntity, url)
	return err
}
