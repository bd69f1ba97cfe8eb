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

// TestForkCarriesAttachments: an entity fork gives its copy the attachments its stream
// names at the fork point — a whole fork all of them, readable from the copy byte for
// byte and owned by it; a pointer fork cut before an upload not that one.
func TestForkCarriesAttachments(t *testing.T) {
	h := setup(t, testserver.Options{QuietLogs: true})
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "src", `{}`)
	first := randomBytes(t, 1<<20+7)
	requireStatus(t, h.upload("/chat/src", first, field("id", "a1")), http.StatusCreated)
	cut := h.events("/chat/src")
	requireStatus(t, h.upload("/chat/src", []byte("after the cut"), field("id", "a2")), http.StatusCreated)

	whole := h.mustFork("/chat/src", `{"instance_id":"whole"}`)
	require.Equal(t, "/chat/whole", str(t, whole.Root["url"]))
	got := h.do(http.MethodGet, entitiesPath+"/chat/whole/attachments/a1", nil)
	requireStatus(t, got, http.StatusOK)
	require.Equal(t, first, got.Body)
	requireStatus(t, h.do(http.MethodGet, entitiesPath+"/chat/whole/attachments/a2", nil), http.StatusOK)
	// cut after the first upload's manifest entry: a1 goes along, a2 does not
	h.mustFork("/chat/src", `{"instance_id":"cut","fork_pointer":{"offset":"`+
		cut[len(cut)-2].Headers["offset"]+`","sub_offset":1}}`)
	requireStatus(t, h.do(http.MethodGet, entitiesPath+"/chat/cut/attachments/a1", nil), http.StatusOK)
	requireStatus(t, h.do(http.MethodGet, entitiesPath+"/chat/cut/attachments/a2", nil), http.StatusNotFound)
	// the copy's bytes are its own: deleting the source's leaves them
	requireStatus(t, h.do(http.MethodDelete, entitiesPath+"/chat/src/attachments/a1", nil), http.StatusOK)
	got = h.do(http.MethodGet, entitiesPath+"/chat/whole/attachments/a1", nil)
	requireStatus(t, got, http.StatusOK)
	require.Equal(t, first, got.Body)

}
