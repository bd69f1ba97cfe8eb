package mcpserve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/mcpserve"
)

type timelineDoc struct {
	Entity string `json:"entity"`
	Stream string `json:"stream"`
	Offset string `json:"offset"`
	Events []struct {
		Offset string `json:"offset"`
		Event  struct {
			Type  string `json:"type"`
			Key   string `json:"key"`
			Value struct {
				Payload json.RawMessage `json:"payload"`
			} `json:"value"`
		} `json:"event"`
	} `json:"events"`
}

type stateDoc struct {
	Entity      string                                `json:"entity"`
	Offset      string                                `json:"offset"`
	Collections map[string]map[string]json.RawMessage `json:"collections"`
}

func readJSON(t *testing.T, cs *mcp.ClientSession, uri string, into any) {
	t.Helper()
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	require.NoError(t, err)
	require.Len(t, res.Contents, 1)
	require.Equal(t, uri, res.Contents[0].URI)
	require.Equal(t, "application/json", res.Contents[0].MIMEType)
	require.NoError(t, json.Unmarshal([]byte(res.Contents[0].Text), into), res.Contents[0].Text)
}

// An entity's timeline and state are MCP resources: listed, readable, bounded, and
// subscribable — a message sent to the entity produces resources/updated, after which
// the resources show it.
func TestEntityResources(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{QuietLogs: true,
		MCP: mcpserve.Options{TimelineEvents: 3, ResourceUpdateInterval: 10 * time.Millisecond}})
	e := &env{t: t, srv: srv}
	e.http("POST", "/_electric/entity-types", chatType, "", http.StatusCreated)
	e.http("PUT", "/_electric/entities/chat/one", `{}`, "", http.StatusCreated)
	const timeline, state = "entityd://entity/chat/one/timeline", "entityd://entity/chat/one/state"

	updated := make(chan string, 64)
	mc := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			updated <- r.Params.URI
		}})
	cs, err := mc.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: srv.URL + "/_electric/entities/chat/one/mcp", MaxRetries: -1}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	ctx := context.Background()

	caps := cs.InitializeResult().Capabilities
	require.NotNil(t, caps.Resources)
	require.True(t, caps.Resources.Subscribe)
	list, err := cs.ListResources(ctx, &mcp.ListResourcesParams{})
	require.NoError(t, err)
	var uris []string
	for _, r := range list.Resources {
		uris = append(uris, r.URI)
		require.Equal(t, "application/json", r.MIMEType)
		require.NotEmpty(t, r.Description)
	}
	require.ElementsMatch(t, []string{timeline, state}, uris)

	var tl timelineDoc
	readJSON(t, cs, timeline, &tl)
	require.Equal(t, "/chat/one", tl.Entity)
	require.Equal(t, "/chat/one/main", tl.Stream)
	startOffset := tl.Offset

	require.NoError(t, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: timeline}))
	require.NoError(t, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: state}))
	for i := range 5 {
		e.http("POST", "/_electric/entities/chat/one/send",
			fmt.Sprintf(`{"type":"note","payload":{"n":%d}}`, i), "", http.StatusOK)
	}
	// both resources are announced (the watcher may gather the five sends into fewer
	// rounds, never into none)
	seen := map[string]bool{}
	for len(seen) < 2 {
		select {
		case uri := <-updated:
			seen[uri] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("resources/updated for %v only", seen)
		}
	}
	require.Equal(t, map[string]bool{timeline: true, state: true}, seen)

	// the timeline is the newest TimelineEvents events, oldest first, each with the
	// offset after it; the last offset is the stream's tail
	require.Eventually(t, func() bool {
		readJSON(t, cs, timeline, &tl)
		return len(tl.Events) == 3 && string(tl.Events[2].Event.Value.Payload) == `{"n":4}`
	}, 5*time.Second, 10*time.Millisecond)
	require.Greater(t, tl.Offset, startOffset)
	require.Equal(t, tl.Offset, tl.Events[2].Offset)
	for i, ev := range tl.Events {
		require.Equal(t, "inbox", ev.Event.Type)
		require.JSONEq(t, fmt.Sprintf(`{"n":%d}`, i+2), string(ev.Event.Value.Payload))
		if i > 0 {
			require.Greater(t, ev.Offset, tl.Events[i-1].Offset)
		}
	}

	// the state holds every message, however many the timeline shows
	var st stateDoc
	readJSON(t, cs, state, &st)
	require.Equal(t, tl.Offset, st.Offset)
	require.Len(t, st.Collections["inbox"], 5)

	// only the entity's own resources exist
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "entityd://entity/chat/other/timeline"})
	require.Equal(t, int64(mcp.CodeResourceNotFound), rpcCode(err), "%v", err)
	err = cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://watched-resource"})
	require.Equal(t, int64(mcp.CodeResourceNotFound), rpcCode(err), "%v", err)
	require.NoError(t, cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: timeline}))
}

// The timeline keeps the newest event however large it is, and older ones only while
// they fit TimelineBytes.
func TestTimelineIsBoundedInBytes(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{QuietLogs: true, MCP: mcpserve.Options{TimelineBytes: 600}})
	e := &env{t: t, srv: srv}
	e.http("POST", "/_electric/entity-types", chatType, "", http.StatusCreated)
	e.http("PUT", "/_electric/entities/chat/one", `{}`, "", http.StatusCreated)
	big := fmt.Sprintf(`{"type":"note","payload":{"s":"%0800d"}}`, 0)
	e.http("POST", "/_electric/entities/chat/one/send", `{"type":"note","payload":{"n":1}}`, "", http.StatusOK)
	e.http("POST", "/_electric/entities/chat/one/send", big, "", http.StatusOK)
	c := e.mustConnect("", "")
	var tl timelineDoc
	readJSON(t, c.ClientSession, "entityd://entity/chat/one/timeline", &tl)
	require.Len(t, tl.Events, 1, "the small older message does not fit beside the big newest one")
	require.Contains(t, string(tl.Events[0].Event.Value.Payload), `"s":"000`)
}

// Every list and read is private to the caller (it needed read on the entity), and a
// command without a description still has one, which editors list prompts by.
func TestResultsArePrivateAndPromptsDescribed(t *testing.T) {
	e := setup(t)
	e.http("PUT", "/_electric/entities/chat/one/slash-commands/bare?owner=ops", `{"name":"bare"}`, "", http.StatusOK)
	c := e.mustConnect("", "")
	ctx := context.Background()
	prompts, err := c.ListPrompts(ctx, &mcp.ListPromptsParams{})
	require.NoError(t, err)
	require.Equal(t, "private", prompts.CacheScope)
	descriptions := map[string]string{}
	for _, p := range prompts.Prompts {
		descriptions[p.Name] = p.Description
	}
	require.Equal(t, "The slash command /bare", descriptions["bare"])
	require.Equal(t, "Show how to get started", descriptions["quickstart"])
	resources, err := c.ListResources(ctx, &mcp.ListResourcesParams{})
	require.NoError(t, err)
	require.Equal(t, "private", resources.CacheScope)
	read, err := c.ReadResource(ctx, &mcp.ReadResourceParams{URI: "entityd://entity/chat/one/state"})
	require.NoError(t, err)
	require.Equal(t, "private", read.CacheScope)
}
