package mcpserve_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/pgtest"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/internal/testwait"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// chatType has the commands the tests look for: one without arguments, one with a
// required number and an optional boolean.
const chatType = `{"name":"chat","description":"d","slash_commands":[
 {"name":"quickstart","description":"Show how to get started"},
 {"name":"pr-review","description":"Review a pull request","arguments":[
   {"name":"number","type":"number","required":true,"description":"the pull request"},
   {"name":"include_tests","type":"boolean"}]}]}`

type env struct {
	t   *testing.T
	srv *testserver.Server
}

func setup(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, srv: testserver.Start(t, testserver.Options{QuietLogs: true})}
	e.http("POST", "/_electric/entity-types", chatType, "", http.StatusCreated)
	e.http("PUT", "/_electric/entities/chat/one", `{}`, "", http.StatusCreated)
	return e
}

// http makes a plain API request as principal who ("" for dev mode's default) and
// checks the status.
func (e *env) http(method, path, body, who string, want int) []byte {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	require.NoError(e.t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if who != "" {
		req.Header.Set("Electric-Principal", who)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	require.Equal(e.t, want, resp.StatusCode, "%s %s: %s", method, path, out)
	return out
}

// headerTransport adds the caller's principal to every request of an MCP client.
type headerTransport struct{ who string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if h.who != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Electric-Principal", h.who)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// client is one MCP client session; changed receives a value per list_changed.
type client struct {
	*mcp.ClientSession
	changed chan struct{}
}

// connect opens an MCP session to chat/one with the official Go SDK, speaking
// protocol version (the SDK's newest when "").
func (e *env) connect(who, version string) (*client, error) {
	return e.connectTo("one", who, version)
}

// connectTo opens an MCP session to chat/<id>, as connect does.
func (e *env) connectTo(id, who, version string) (*client, error) {
	c := &client{changed: make(chan struct{}, 16)}
	mc := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			select {
			case c.changed <- struct{}{}:
			default:
			}
		}})
	tr := &mcp.StreamableClientTransport{Endpoint: e.srv.URL + "/_electric/entities/chat/" + id + "/mcp",
		HTTPClient: &http.Client{Transport: headerTransport{who: who}}, MaxRetries: -1}
	cs, err := mc.Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, err
	}
	e.t.Cleanup(func() { _ = cs.Close() })
	c.ClientSession = cs
	return c, nil
}

func (e *env) mustConnect(who, version string) *client {
	e.t.Helper()
	c, err := e.connect(who, version)
	require.NoError(e.t, err)
	return c
}

func (c *client) promptNames(t *testing.T) []string {
	t.Helper()
	res, err := c.ListPrompts(context.Background(), &mcp.ListPromptsParams{})
	require.NoError(t, err)
	var names []string
	for _, p := range res.Prompts {
		names = append(names, p.Name)
	}
	return names
}

// waitChanged waits for a list_changed notification.
func (c *client) waitChanged(t *testing.T) {
	t.Helper()
	select {
	case <-c.changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/prompts/list_changed within 5s")
	}
}

func rpcCode(err error) int64 {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return je.Code
	}
	return 0
}

// The prompts are the entity's commands, with their arguments; prompts/get returns
// the invocation and refuses bad arguments with -32602.
func TestPromptsAreTheEntitysCommands(t *testing.T) {
	e := setup(t)
	for _, version := range []string{"", "2025-11-25", "2025-03-26"} {
		t.Run("protocol "+version, func(t *testing.T) {
			c := e.mustConnect("", version)
			ctx := context.Background()
			res, err := c.ListPrompts(ctx, &mcp.ListPromptsParams{})
			require.NoError(t, err)
			got, _ := json.Marshal(res.Prompts)
			require.JSONEq(t, `[
 {"name":"pr-review","title":"/pr-review","description":"Review a pull request","arguments":[
   {"name":"number","description":"the pull request (number)","required":true},
   {"name":"include_tests","description":"boolean"}]},
 {"name":"quickstart","title":"/quickstart","description":"Show how to get started","arguments":[
   {"name":"input","description":"Free text after the command"}]}]`, string(got))
			require.True(t, c.InitializeResult().Capabilities.Prompts.ListChanged)

			get := func(name string, args map[string]string) (*mcp.GetPromptResult, error) {
				return c.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
			}
			r, err := get("pr-review", map[string]string{"number": "7", "include_tests": "true"})
			require.NoError(t, err)
			require.Equal(t, "/pr-review 7 true", r.Messages[0].Content.(*mcp.TextContent).Text)
			require.Equal(t, mcp.Role("user"), r.Messages[0].Role)
			r, err = get("quickstart", map[string]string{"input": "for a new repo"})
			require.NoError(t, err)
			require.Equal(t, "/quickstart for a new repo", r.Messages[0].Content.(*mcp.TextContent).Text)

			for _, bad := range []struct {
				name string
				args map[string]string
			}{
				{"nope", nil},
				{"pr-review", nil},
				{"pr-review", map[string]string{"number": "seven"}},
				{"pr-review", map[string]string{"number": "7", "include_tests": "yes"}},
				{"pr-review", map[string]string{"number": "7", "extra": "x"}},
			} {
				_, err := get(bad.name, bad.args)
				require.Error(t, err, "%s %v", bad.name, bad.args)
				require.EqualValues(t, jsonrpc.CodeInvalidParams, rpcCode(err), "%s %v: %v", bad.name, bad.args, err)
			}

			comp, err := c.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "pr-review"},
				Argument: mcp.CompleteParamsArgument{Name: "include_tests", Value: "t"}})
			require.NoError(t, err)
			require.Equal(t, []string{"true"}, comp.Completion.Values)
		})
	}
}

// A command registered, layered and removed over HTTP reaches every connected session
// as list_changed, and the next list shows it: driven by the collection stream.
func TestListChangedFollowsTheCollection(t *testing.T) {
	e := setup(t)
	a := e.mustConnect("", "")           // the SDK's newest protocol (subscriptions/listen)
	b := e.mustConnect("", "2025-11-25") // a session with a GET notification stream
	require.Equal(t, []string{"pr-review", "quickstart"}, a.promptNames(t))

	e.http("PUT", "/_electric/entities/chat/one/slash-commands/deploy?owner=ops",
		`{"name":"deploy","description":"Ship it"}`, "", http.StatusOK)
	for _, c := range []*client{a, b} {
		c.waitChanged(t)
		require.Equal(t, []string{"deploy", "pr-review", "quickstart"}, c.promptNames(t))
	}

	// a dynamic layer over a static command changes its description; removing it
	// brings the static one back
	e.http("PUT", "/_electric/entities/chat/one/slash-commands/quickstart?owner=ops",
		`{"name":"quickstart","description":"Layered"}`, "", http.StatusOK)
	b.waitChanged(t)
	r, err := b.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "quickstart"})
	require.NoError(t, err)
	require.Equal(t, "Layered", r.Description)
	e.http("DELETE", "/_electric/entities/chat/one/slash-commands/quickstart?owner=ops", "", "", http.StatusOK)
	e.http("DELETE", "/_electric/entities/chat/one/slash-commands/deploy?owner=ops", "", "", http.StatusOK)
	testwait.Until(t, "the prompt list to change", func() bool {
		names := b.promptNames(t)
		r, err := b.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "quickstart"})
		return err == nil && r.Description == "Show how to get started" && len(names) == 2
	}, 5*time.Second)
	a.waitChanged(t)

	// re-registering the type reconciles its static commands into the entity
	e.http("POST", "/_electric/entity-types", strings.Replace(chatType, `"slash_commands":[`,
		`"slash_commands":[{"name":"release","description":"Cut a release"},`, 1), "", http.StatusCreated)
	testwait.Until(t, "the new prompt to be listed", func() bool {
		return slices.Equal([]string{"pr-review", "quickstart", "release"}, a.promptNames(t))
	}, 5*time.Second)
	a.waitChanged(t)
}

type storedInbox struct {
	Type  string `json:"type"`
	Value struct {
		From        string          `json:"from"`
		MessageType string          `json:"message_type"`
		Payload     json.RawMessage `json:"payload"`
	} `json:"value"`
}

func (e *env) inbox() []storedInbox {
	e.t.Helper()
	var events []storedInbox
	require.NoError(e.t, json.Unmarshal(e.http("GET", "/chat/one/main?offset=-1", "", "", http.StatusOK), &events))
	var out []storedInbox
	for _, ev := range events {
		if ev.Type == "inbox" {
			out = append(out, ev)
		}
	}
	return out
}

// The send tool delivers a composer_input built from a prompt invocation, with the
// command as a slash_command node at its UTF-16 span, unknown commands flagged, and
// the caller as the sender.
func TestSendToolDeliversComposerInput(t *testing.T) {
	e := setup(t)
	c := e.mustConnect("", "")
	ctx := context.Background()
	call := func(args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "send", Arguments: args})
		require.NoError(t, err)
		return res
	}
	res := call(map[string]any{"prompt": "pr-review", "arguments": map[string]string{"number": "7"},
		"text": "👋 and /unknown-thing", "key": "mcp-1"})
	require.False(t, res.IsError, "%+v", res.Content)
	out, _ := json.Marshal(res.StructuredContent)
	require.Regexp(t, `^\{"offset":"\d{16}_\d{16}","txid":"[0-9a-f-]{36}"\}$`, string(out))

	msgs := e.inbox()
	require.Len(t, msgs, 1)
	require.Equal(t, "composer_input", msgs[0].Value.MessageType)
	require.Equal(t, "/principal/system%3Adev-local", msgs[0].Value.From)
	require.JSONEq(t, `{"source":"/pr-review 7 👋 and /unknown-thing","nodes":[
	  {"kind":"slash_command","start":0,"end":10,"raw":"/pr-review","name":"pr-review"},
	  {"kind":"slash_command","start":20,"end":34,"raw":"/unknown-thing","name":"unknown-thing","unknown":true}]}`,
		string(msgs[0].Value.Payload))

	// a retry with the same key is not delivered twice; bad invocations send nothing
	require.False(t, call(map[string]any{"prompt": "pr-review", "arguments": map[string]string{"number": "7"},
		"text": "👋 and /unknown-thing", "key": "mcp-1"}).IsError)
	for _, bad := range []map[string]any{
		{"prompt": "pr-review"},
		{"prompt": "nope"},
		{"arguments": map[string]string{"number": "7"}},
		{},
		{"text": "hi", "mode": "sideways"},
		{"text": "hi", "key": strings.Repeat("k", 257)},
	} {
		require.True(t, call(bad).IsError, "%v", bad)
	}
	require.Len(t, e.inbox(), 1)
}

// Who may use an entity's MCP endpoint: read to connect and list, write to send; a
// session belongs to the principal who opened it.
func TestMCPPermissions(t *testing.T) {
	e := setup(t)
	_, err := e.connect("user:alice", "2025-11-25")
	require.Error(t, err, "alice has no grant on chat/one")

	grant := func(who, perm string) {
		e.http("POST", "/_electric/entities/chat/one/grants",
			`{"subject_kind":"principal","subject_value":"`+who+`","permission":"`+perm+`"}`, "", http.StatusCreated)
	}
	grant("user:alice", "read")
	c := e.mustConnect("user:alice", "2025-11-25")
	require.Equal(t, []string{"pr-review", "quickstart"}, c.promptNames(t))
	res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "send", Arguments: map[string]any{"text": "hi"}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, res.Content[0].(*mcp.TextContent).Text, "may not write")
	require.Empty(t, e.inbox())

	grant("user:alice", "write")
	testwait.Until(t, "the tool call to succeed", func() bool {
		res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "send", Arguments: map[string]any{"text": "hi"}})
		return err == nil && !res.IsError
	}, 5*time.Second)
	require.Equal(t, "/principal/user%3Aalice", e.inbox()[0].Value.From)

	// bob may read too, but not through alice's session
	grant("user:bob", "read")
	req, err := http.NewRequest("POST", e.srv.URL+"/_electric/entities/chat/one/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"prompts/list"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.ID())
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Electric-Principal", "user:bob")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	// an entity that does not exist
	e.http("POST", "/_electric/entities/chat/none/mcp", `{}`, "", http.StatusNotFound)
}

// Bad JSON-RPC on an open session gets protocol errors and changes nothing.
func TestMCPBadInput(t *testing.T) {
	e := setup(t)
	c := e.mustConnect("", "2025-11-25")
	post := func(body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("POST", e.srv.URL+"/_electric/entities/chat/one/mcp", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", c.ID())
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	status, _ := post(`{"jsonrpc":"2.0","id":1,"method":`)
	require.Equal(t, http.StatusBadRequest, status)
	status, body := post(`{"jsonrpc":"2.0","id":2,"method":"prompts/nope"}`)
	require.Equal(t, http.StatusBadRequest, status, body) // the SDK refuses unknown methods at the door
	require.Contains(t, body, "unsupported")
	status, body = post(`{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"nope"}}`)
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, `"code":-32602`)
	status, _ = post(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"send","arguments":{"text":"` +
		strings.Repeat("x", 2<<20) + `"}}}`)
	require.Equal(t, http.StatusRequestEntityTooLarge, status)
	require.Empty(t, e.inbox())
	// the session still works
	require.Equal(t, []string{"pr-review", "quickstart"}, c.promptNames(t))
}

// prompts/list pages through many commands: every command once, in name order, and
// the last page has no cursor.
func TestPromptsArePaginated(t *testing.T) {
	e := &env{t: t, srv: testserver.Start(t, testserver.Options{QuietLogs: true})}
	var defs []string
	for i := range 450 {
		defs = append(defs, `{"name":"c`+strconv.Itoa(1000+i)+`"}`)
	}
	e.http("POST", "/_electric/entity-types", `{"name":"chat","description":"d","slash_commands":[`+strings.Join(defs, ",")+`]}`, "", http.StatusCreated)
	e.http("PUT", "/_electric/entities/chat/one", `{}`, "", http.StatusCreated)
	c := e.mustConnect("", "2025-11-25")
	var names []string
	pages := 0
	cursor := ""
	for {
		res, err := c.ListPrompts(context.Background(), &mcp.ListPromptsParams{Cursor: cursor})
		require.NoError(t, err)
		pages++
		require.LessOrEqual(t, len(res.Prompts), 200)
		for _, p := range res.Prompts {
			names = append(names, p.Name)
		}
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	require.Equal(t, 3, pages)
	require.Len(t, names, 450)
	require.True(t, slices.IsSorted(names))
	require.Equal(t, "c1000", names[0])
}
