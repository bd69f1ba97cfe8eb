package acp_test

import (
	"net/http"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/acp"
	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/examples/assistant"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/runtime"
)

// In jwt mode the adapter sends its --token on every request, including its followers of
// the command collection: it spawns the entity as the token's principal, gets the
// commands, and its prompts arrive from that principal. Without a token, or with one for
// a principal that may not read the entity, session/new fails with the server's reason.
func TestACPInJWTMode(t *testing.T) {
	key := testserver.NewJWTKey(t)
	srv := testserver.Start(t, testserver.Options{API: api.Config{Auth: key.Auth}, QuietLogs: true,
		Admins: []string{"user:root"}, Definitions: []runtime.EntityDefinition{assistant.Definition(t.TempDir())}})
	ada := key.Token(t, "user:ada")
	authed := func(method, path, token, body string) (int, []byte) {
		t.Helper()
		return srv.Call(t, method, path, body, "Authorization", "Bearer "+token)
	}
	// the demo type is the server's: an operator lets ada spawn it
	status, body := authed(http.MethodPost, "/_electric/entity-types/assistant/grants", key.Token(t, "user:root"),
		`{"subject_kind":"principal","subject_value":"user:ada","permission":"spawn"}`)
	require.Equal(t, http.StatusCreated, status, string(body))

	ed := startAdapter(t, srv, "assistant/j1", func(o *acp.Options) { o.Token, o.Spawn = ada, true })
	ed.initialize(t)
	id, s := ed.newSession(t, nil)
	require.Equal(t, staticCommands, commands(s.nextCommands(t)))
	stop, err := ed.prompt(t, id, sdk.TextBlock("/quickstart now"))
	require.NoError(t, err)
	require.Equal(t, sdk.StopReasonEndTurn, stop)
	require.Contains(t, strings.Join(s.reply(), ""), "Command /quickstart")

	status, body = authed(http.MethodGet, "/assistant/j1/main?offset=-1", ada, "")
	require.Equal(t, http.StatusOK, status, string(body))
	require.Equal(t, []string{"/principal/user%3Aada"}, testserver.InboxSenders(t, body))

	for who, opt := range map[string]func(*acp.Options){
		"no token": func(o *acp.Options) {},
		"eve's":    func(o *acp.Options) { o.Token = key.Token(t, "user:eve") },
		"forged":   func(o *acp.Options) { o.Token = "not-a-jwt" },
	} {
		other := startAdapter(t, srv, "assistant/j1", opt)
		other.initialize(t)
		_, err := other.NewSession(ctxT(t), sdk.NewSessionRequest{Cwd: "/work", McpServers: []sdk.McpServer{}})
		re := requestError(t, err)
		require.Regexp(t, `(?i)unauthori|not allowed|token`, re.Message, who)
	}
}
