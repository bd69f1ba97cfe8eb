package acp

import (
	"context"
	"os"
	"path/filepath"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// listPageSize is the most sessions one session/list answer holds.
const listPageSize = 100

// maxListRounds bounds the entity-list requests behind one session/list answer. The
// server pages before it leaves out entities the caller may not read, so a page can come
// back short; the adapter asks for more until its page is full, the list ends, or this
// many requests were made (the answer's cursor then continues where they stopped).
const maxListRounds = 8

// ListSessions is session/list: the sessions session/load can open, which are the
// entities of the adapter's type (the type of --entity) that the caller may read, ended
// ones included (their history can be read), in the server's list order (oldest first),
// listPageSize at a time. The cursor is the server's: the URL of the last entity listed.
//
// Each session's id is the entity's URL (sessionid.go), its title the same URL, its
// updatedAt the entity's last change (a run starting or ending, a tag or status change),
// and _meta.entityd.status the entity's status. An entity is not bound to a directory:
// cwd is the one the client filters by, when it does (every entity matches it), else
// the adapter's working directory.
func (a *agent) ListSessions(ctx context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	cwd := workingDir()
	if p.Cwd != nil {
		if !filepath.IsAbs(*p.Cwd) {
			return sdk.ListSessionsResponse{}, notAbsolute("/cwd")
		}
		cwd = *p.Cwd
	}
	after := ""
	if p.Cursor != nil {
		after = *p.Cursor
	}
	sessions := []sdk.SessionInfo{}
	for range maxListRounds {
		rows, next, err := a.api.listEntities(ctx, a.api.typ, after, listPageSize-len(sessions))
		if err != nil {
			return sdk.ListSessionsResponse{}, toRequestError(err) // a stale cursor is the server's 400: -32602
		}
		for _, r := range rows {
			sessions = append(sessions, sessionInfo(r, cwd))
		}
		after = next
		if next == "" || len(sessions) >= listPageSize {
			break
		}
	}
	res := sdk.ListSessionsResponse{Sessions: sessions}
	if after != "" {
		res.NextCursor = &after
	}
	return res, nil
}

func sessionInfo(r entityRow, cwd string) sdk.SessionInfo {
	title := r.URL
	updated := time.UnixMilli(r.UpdatedAt).UTC().Format("2006-01-02T15:04:05.000Z")
	return sdk.SessionInfo{SessionId: sdk.SessionId(r.URL), Cwd: cwd, Title: &title, UpdatedAt: &updated,
		Meta: map[string]any{"entityd": map[string]any{"status": r.Status}}}
}

// workingDir is the adapter's working directory (an editor starts it in the project's),
// or "/" when that cannot be told.
func workingDir() string {
	if wd, err := os.Getwd(); err == nil && filepath.IsAbs(wd) {
		return wd
	}
	return "/"
}
