package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/attachment"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/streamdb"
)

// TestAttachmentForkTx: what an entity fork calls to copy attachments — the kept ones
// read back from the copy, byte for byte, with an entry naming the copy's stream, and
// stay readable there once the source's are deleted.
func TestAttachmentForkTx(t *testing.T) {
	h := setup(t, testserver.Options{QuietLogs: true})
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "c1", `{}`)
	h.mustSpawn("chat", "c2", `{}`)
	data := randomBytes(t, 3<<20+5)
	requireStatus(t, h.upload("/chat/c1", data, field("id", "a1"), field("mimeType", "image/png")), http.StatusCreated)
	requireStatus(t, h.upload("/chat/c1", []byte("later"), field("id", "a2")), http.StatusCreated)
	var n int
	require.NoError(t, h.srv.Streams.WithTx(context.Background(), func(ctx context.Context, tx *streamdb.Tx) (err error) {
		n, err = attachment.ForkTx(ctx, tx, "/chat/c1", "/chat/c2", func(id string) bool { return id == "a1" })
		return err
	}))
	require.Equal(t, 1, n)
	requireStatus(t, h.do(http.MethodDelete, entitiesPath+"/chat/c1/attachments/a1", nil), http.StatusOK)
	got := h.do(http.MethodGet, entitiesPath+"/chat/c2/attachments/a1", nil)
	requireStatus(t, got, http.StatusOK)
	require.Equal(t, data, got.Body)
	require.Equal(t, "image/png", got.Header.Get("Content-Type"))
	requireStatus(t, h.do(http.MethodGet, entitiesPath+"/chat/c2/attachments/a2", nil), http.StatusNotFound)
	var entry string
	require.NoError(t, h.srv.Pool.QueryRow(context.Background(),
		`SELECT entry->>'streamPath' FROM attachments WHERE entity_url = '/chat/c2' AND id = 'a1'`).Scan(&entry))
	require.Equal(t, "/chat/c2/attachments/a1", entry)
	requireStatus(t, h.do(http.MethodGet, "/chat/c2/attachments/a1?offset=-1", nil), http.StatusOK)
}
