package runtime_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/server"
	"github.com/entityd/entityd/wake"
)

// TestServerOnABusyAddressChangesNothing: a second server started by mistake on the same
// address and database (say, an example program next to `make run`) must fail before it
// re-registers its types: the running server's type and its live entities' static
// commands stay as they were.
func TestServerOnABusyAddressChangesNothing(t *testing.T) {
	noop := func(*runtime.Context) error { return nil }
	first := runtime.EntityDefinition{Type: "notebook", Handler: noop,
		SlashCommands: []runtime.SlashCommand{{Name: "search"}, {Name: "summarize"}}}
	e := startServer(t, wake.Options{}, false, first)
	url := e.spawn("notebook", "n1", nil)
	before := e.do(http.MethodGet, "/_electric/entity-types/notebook", nil)
	require.Equal(t, http.StatusOK, before.Status)
	cmdsBefore := e.do(http.MethodGet, entitiesPath+url+"/slash-commands", nil)
	require.Equal(t, http.StatusOK, cmdsBefore.Status)

	second := runtime.EntityDefinition{Type: "notebook", Handler: noop,
		SlashCommands: []runtime.SlashCommand{{Name: "count"}}}
	srv := server.New(server.Config{DatabaseURL: e.dbURL, Addr: strings.TrimPrefix(e.base, "http://"),
		Logger: zap.NewNop(), ShutdownTimeout: 5 * time.Second}, second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := srv.Run(ctx)
	require.Error(t, err)
	require.Contains(t, err.Error(), "listen on")

	after := e.do(http.MethodGet, "/_electric/entity-types/notebook", nil)
	require.JSONEq(t, string(before.Body), string(after.Body), "the type was not re-registered")
	cmdsAfter := e.do(http.MethodGet, entitiesPath+url+"/slash-commands", nil)
	require.JSONEq(t, string(cmdsBefore.Body), string(cmdsAfter.Body), "the live entity's commands were not reconciled")
	require.Contains(t, string(cmdsAfter.Body), `"summarize"`)
}
