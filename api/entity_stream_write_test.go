package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEntityStreamWritesNeedTheWriteToken: a direct append to an entity's main stream is
// refused without the token spawn returned (missing and wrong are told apart), accepted
// with it as a bearer token or as Electric-Claim-Token, and nothing refused is appended.
func TestEntityStreamWritesNeedTheWriteToken(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	r := h.spawn("chat", "w", nil)
	requireStatus(t, r, http.StatusCreated)
	token := r.Header.Get("X-Write-Token")
	require.NotEmpty(t, token)
	event := `{"type":"note","key":"n1","value":{"text":"hi"},"headers":{"operation":"insert"}}`

	requireError(t, h.do(http.MethodPost, "/chat/w/main", event), http.StatusUnauthorized, "UNAUTHORIZED",
		"Missing write token: appending to an entity stream needs Authorization: Bearer <X-Write-Token from spawn>")
	requireError(t, h.do(http.MethodPost, "/chat/w/main", event, "Authorization", "Bearer "+token+"x"),
		http.StatusUnauthorized, "UNAUTHORIZED", "Invalid write token")
	requireError(t, h.do(http.MethodPost, "/chat/nobody/main", event, "Authorization", "Bearer "+token),
		http.StatusNotFound, "STREAM_NOT_FOUND", "Stream not found")
	require.Equal(t, []string{"entity_created"}, types(h.events("/chat/w")), "refused appends wrote nothing")

	ok := h.do(http.MethodPost, "/chat/w/main", event, "Authorization", "Bearer "+token)
	require.Equal(t, http.StatusNoContent, ok.Status, "body: %s", ok.Body)
	require.NotEmpty(t, ok.Header.Get("Stream-Next-Offset"))
	ok = h.do(http.MethodPost, "/chat/w/main", `{"type":"note","key":"n2","value":{},"headers":{"operation":"insert"}}`,
		"Electric-Claim-Token", token)
	require.Equal(t, http.StatusNoContent, ok.Status, "body: %s", ok.Body)
	require.Equal(t, []string{"entity_created", "note", "note"}, types(h.events("/chat/w")))
}
