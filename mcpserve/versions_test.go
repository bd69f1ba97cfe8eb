package mcpserve_test

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/mcpserve"
)

// The versions the docs claim (docs/EDITORS.md) are the ones an initialize negotiates:
// each one as asked, and 2026-07-28 — the stateless protocol, which sessions cannot
// serve — answered with the newest handshake version, for the client to disconnect.
func TestProtocolVersionsAreWhatInitializeNegotiates(t *testing.T) {
	e := setup(t)
	negotiated := regexp.MustCompile(`"protocolVersion":"([0-9-]+)"`)
	initialize := func(version string) string {
		t.Helper()
		req, err := http.NewRequest("POST", e.srv.URL+"/_electric/entities/chat/one/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+version+
				`","capabilities":{},"clientInfo":{"name":"versions","version":"1"}}}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		m := negotiated.FindSubmatch(body)
		require.NotNil(t, m, string(body))
		return string(m[1])
	}
	require.Equal(t, []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}, mcpserve.ProtocolVersions)
	for _, v := range mcpserve.ProtocolVersions {
		require.Equal(t, v, initialize(v))
	}
	require.Equal(t, "2025-11-25", initialize("2026-07-28"))

	// a stateless 2026-07-28 request is refused with -32022 and exactly these versions
	req, err := http.NewRequest("POST", e.srv.URL+"/_electric/entities/chat/one/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"prompts/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var refused struct {
		Error struct {
			Code int64 `json:"code"`
			Data struct {
				Supported []string `json:"supported"`
			} `json:"data"`
		} `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&refused))
	require.EqualValues(t, -32022, refused.Error.Code)
	require.Equal(t, mcpserve.ProtocolVersions, refused.Error.Data.Supported)
}
