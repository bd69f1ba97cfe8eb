package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/entity"
	"github.com/entityd/entityd/internal/testserver"
	"github.com/entityd/entityd/internal/testwait"
	"github.com/entityd/entityd/runtime"
	"github.com/entityd/entityd/streamdb"
)

// forkAnswer is the 201 of a fork.
type forkAnswer struct {
	Root     map[string]json.RawMessage   `json:"root"`
	Entities []map[string]json.RawMessage `json:"entities"`
}

func (h *harness) fork(url string, body any) *response {
	h.t.Helper()
	if body == nil {
		body = "{}"
	}
	return h.do(http.MethodPost, entitiesPath+url+"/fork", body)
}

func (h *harness) mustFork(url string, body any) forkAnswer {
	h.t.Helper()
	r := h.fork(url, body)
	requireStatus(h.t, r, http.StatusCreated)
	var out forkAnswer
	r.decode(h.t, &out)
	require.NotEmpty(h.t, out.Entities)
	require.JSONEq(h.t, string(out.Root["url"]), string(out.Entities[0]["url"]), "the root is the first entity")
	return out
}

// storedEvents are a stream's events as stored (without the offsets reads add).
func storedEvents(evs []event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = stored(e.Raw)
	}
	return out
}

// appendEvents writes State Protocol events to an entity's stream as its handler would.
func (h *harness) appendEvents(url string, events ...string) {
	h.t.Helper()
	msgs := make([][]byte, len(events))
	for i, e := range events {
		msgs[i] = []byte(e)
	}
	_, err := h.srv.Streams.Append(context.Background(), &streamdb.AppendRequest{Path: url + "/main", Messages: msgs})
	require.NoError(h.t, err)
}

// TestForkCopiesTheEntity: a fork is a new top-level entity of the same type with the
// source's tags (plus the request's), args and schema snapshot, created by the caller,
// idle; its stream is the source's events as they are, then an entity_created update
// naming the copy's args and parent; its slash commands are the source's; the two go
// their own ways afterwards.
func TestForkCopiesTheEntity(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d",
		"inbox_schemas":{"note":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}},
		"slash_commands":[{"name":"search","description":"Find"}]}`)
	h.mustSpawn("chat", "src", `{"args":{"topic":"birds"},"tags":{"team":"core","owner":"ada"}}`)
	for i := range 3 {
		h.mustSend("/chat/src", fmt.Sprintf(`{"type":"note","payload":{"text":"m%d"}}`, i))
	}
	before := h.events("/chat/src")

	out := h.mustFork("/chat/src", `{"instance_id":"copy","tags":{"owner":"grace","extra":"x"}}`)
	require.Len(t, out.Entities, 1)
	root := out.Root
	require.Equal(t, "/chat/copy", str(t, root["url"]))
	require.Equal(t, "chat", str(t, root["type"]))
	require.Equal(t, "idle", str(t, root["status"]))
	require.JSONEq(t, `{"main":"/chat/copy/main"}`, string(root["streams"]))
	require.JSONEq(t, `{"team":"core","owner":"grace","extra":"x"}`, string(root["tags"]))
	require.JSONEq(t, `{"topic":"birds"}`, string(root["spawn_args"]))
	require.Equal(t, devPrincipal, str(t, root["created_by"]))
	require.NotContains(t, root, "parent")
	require.NotContains(t, string(h.fork("/chat/src", nil).Body), "write_token")

	evs := h.events("/chat/copy")
	require.Equal(t, storedEvents(before), storedEvents(evs[:len(before)]), "the copy starts with the source's events, byte for byte")
	require.Len(t, evs, len(before)+1)
	last := evs[len(before)]
	require.Equal(t, "entity_created", last.Type)
	require.Equal(t, "update", last.Headers["operation"])
	require.Equal(t, "/chat/src", last.Headers["forkedFrom"])
	require.JSONEq(t, `{"topic":"birds"}`, string(last.Value["args"]))
	require.Equal(t, "chat", str(t, last.Value["entity_type"]))

	// slash commands came along
	r := h.do(http.MethodGet, entitiesPath+"/chat/copy/slash-commands", nil)
	requireStatus(t, r, http.StatusOK)
	require.Contains(t, string(r.Body), `"search"`)

	// each goes its own way; the schema snapshot came along (a bad note is refused)
	h.mustSend("/chat/copy", `{"type":"note","payload":{"text":"only in the copy"}}`)
	requireStatus(t, h.send("/chat/copy", `{"type":"note","payload":{}}`), http.StatusUnprocessableEntity)
	require.Len(t, h.events("/chat/src"), len(before), "the source does not see the copy's messages")
	h.mustSend("/chat/src", `{"type":"note","payload":{"text":"only in the source"}}`)
	require.NotContains(t, string(h.readStream("/chat/copy").Last.Body), "only in the source")

	// without instance_id the copy is named after the source
	out = h.mustFork("/chat/src", nil)
	require.Regexp(t, `^/chat/src-fork-[0-9a-f]{8}$`, str(t, out.Root["url"]))

	// a fork of a fork
	out = h.mustFork("/chat/copy", `{"instance_id":"copy2"}`)
	require.Contains(t, string(h.readStream("/chat/copy2").Last.Body), "only in the copy")
	require.Equal(t, "idle", h.status("/chat/copy2"))
}

// TestForkErrors: the answers of §1.3 for what cannot be forked.
func TestForkErrors(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "top", nil)
	h.mustSpawn("chat", "kid", `{"parent":"/chat/top"}`)
	h.mustSpawn("chat", "dead", nil)
	requireStatus(t, h.signal("/chat/dead", `{"signal":"SIGKILL"}`), http.StatusOK)

	requireError(t, h.fork("/chat/kid", nil), http.StatusBadRequest, "INVALID_REQUEST", "Only top-level entities can be forked")
	requireError(t, h.fork("/chat/dead", nil), http.StatusConflict, "NOT_RUNNING", `Cannot fork terminal entity "/chat/dead" or a descendant of it`)
	requireError(t, h.fork("/chat/ghost", nil), http.StatusNotFound, "NOT_FOUND", "Entity not found at /chat/ghost")
	requireError(t, h.fork("/nope/x", nil), http.StatusNotFound, "UNKNOWN_ENTITY_TYPE", "Entity type not found: nope")
	requireError(t, h.do(http.MethodPost, entitiesPath+"/principal/user%3Aa/fork", `{}`), http.StatusBadRequest,
		"INVALID_REQUEST", "Principal entities cannot be forked")
	requireError(t, h.fork("/chat/top", `{"instance_id":"top"}`), http.StatusConflict, "DUPLICATE_URL",
		"An entity already exists at the fork's URL (instance_id top)")
	requireError(t, h.fork("/chat/top", `{"anchor":"latest_completed_run","fork_pointer":{"offset":null,"sub_offset":1}}`),
		http.StatusBadRequest, "INVALID_REQUEST", "fork_pointer and anchor are mutually exclusive")
	requireError(t, h.fork("/chat/top", `{"parent":"/chat/ghost"}`), http.StatusNotFound, "NOT_FOUND", "Parent entity not found")
	requireError(t, h.fork("/chat/top", `{"wake":{"subscriberUrl":"/chat/top","condition":"runFinished"}}`),
		http.StatusBadRequest, "INVALID_REQUEST", "wake requires parent (the fork's wake fires to its parent)")
	requireError(t, h.fork("/chat/top", `{"parent":"/chat/top","wake":{"subscriberUrl":"/chat/kid","condition":"runFinished"}}`),
		http.StatusUnauthorized, "UNAUTHORIZED", "wake.subscriberUrl must match parent")
	requireError(t, h.fork("/chat/top", `{"anchor":"latest_completed_run"}`), http.StatusBadRequest, "INVALID_REQUEST",
		"Source /chat/top/main has no completed run to fork from")
	// nothing was made by any of them
	r := h.do(http.MethodGet, entitiesPath+"?type=chat", nil)
	requireStatus(t, r, http.StatusOK)
	var list []map[string]json.RawMessage
	r.decode(t, &list)
	require.Len(t, list, 3)
}

// TestForkAtPointer: fork_pointer {offset, sub_offset} keeps the events up to the
// sub_offset-th after the event ending at offset (null: the start), whatever the source
// is doing; a pointer that names no event is 400.
func TestForkAtPointer(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "src", nil)
	for i := range 5 {
		h.mustSend("/chat/src", fmt.Sprintf(`{"payload":"m%d"}`, i))
	}
	src := h.events("/chat/src")
	require.Greater(t, len(src), 5)
	// the source is busy: a pointer fork does not wait for it
	require.NoError(t, h.srv.Registry.MarkRunning(context.Background(), "/chat/src"))

	offsetOf := func(e event) string { return e.Headers["offset"] }
	for _, tc := range []struct {
		name    string
		pointer string
		keep    int
	}{
		{"from the start", `{"offset":null,"sub_offset":2}`, 2},
		{"after the second event", `{"offset":"` + offsetOf(src[1]) + `","sub_offset":1}`, 3},
		{"after the second event, three more", `{"offset":"` + offsetOf(src[1]) + `","sub_offset":3}`, 5},
		{"the last event", `{"offset":"` + offsetOf(src[len(src)-2]) + `","sub_offset":1}`, len(src)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := h.mustFork("/chat/src", `{"fork_pointer":`+tc.pointer+`}`)
			evs := h.events(str(t, out.Root["url"]))
			require.Len(t, evs, tc.keep+1)
			require.Equal(t, storedEvents(src[:tc.keep]), storedEvents(evs[:tc.keep]))
			require.Equal(t, "entity_created", evs[tc.keep].Type)
		})
	}
	requireError(t, h.fork("/chat/src", `{"fork_pointer":{"offset":"`+offsetOf(src[len(src)-1])+`","sub_offset":1}}`),
		http.StatusBadRequest, "INVALID_REQUEST",
		"fork_pointer.sub_offset 1 is out of range past its offset on /chat/src/main (valid: 1..0)")
	requireError(t, h.fork("/chat/src", `{"fork_pointer":{"offset":"0000000000000001_0000000000000003","sub_offset":1}}`),
		http.StatusBadRequest, "INVALID_REQUEST", "fork_pointer.offset does not match the end of any event of /chat/src/main")
}

// TestForkLatestCompletedRun: the anchor cuts the source after its last completed run
// (a run started, or failed, later is left out).
func TestForkLatestCompletedRun(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "src", nil)
	h.mustSend("/chat/src", `{"payload":"first"}`)
	run := func(key, op, status string) string {
		return `{"type":"run","key":"` + key + `","value":{"key":"` + key + `","status":"` + status + `"},"headers":{"operation":"` + op + `"}}`
	}
	h.appendEvents("/chat/src", run("r1", "insert", "started"), run("r1", "update", "completed"))
	keep := len(h.events("/chat/src"))
	h.mustSend("/chat/src", `{"payload":"second"}`)
	h.appendEvents("/chat/src", run("r2", "insert", "started"), run("r2", "update", "failed"), run("r3", "insert", "started"))

	out := h.mustFork("/chat/src", `{"anchor":"latest_completed_run"}`)
	evs := h.events(str(t, out.Root["url"]))
	require.Len(t, evs, keep+1)
	require.Equal(t, storedEvents(h.events("/chat/src")[:keep]), storedEvents(evs[:keep]))
	require.Equal(t, "completed", str(t, evs[keep-1].Value["status"]))
}

// TestForkWithChildren: a fork copies the subtree (children, grandchildren), each copy
// under its parent's copy; the parent's child manifest and child_status name the copies.
// A pointer fork keeps only the children its root named by then.
func TestForkWithChildren(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"boss","description":"d"}`)
	h.registerType(`{"name":"worker","description":"d"}`)
	h.mustSpawn("boss", "b", `{"args":{"helper":"/worker/w1"}}`)
	h.mustSpawn("worker", "w1", `{"parent":"/boss/b"}`)
	h.mustSpawn("worker", "w2", `{"parent":"/boss/b"}`)
	h.mustSpawn("worker", "g1", `{"parent":"/worker/w1"}`)
	manifest := func(id string) string {
		return `{"type":"manifest","key":"child:worker:` + id + `","value":{"key":"child:worker:` + id +
			`","kind":"child","id":"` + id + `","entity_type":"worker","entity_url":"/worker/` + id + `","observed":true},"headers":{"operation":"insert"}}`
	}
	h.appendEvents("/boss/b", manifest("w1"),
		`{"type":"child_status","key":"/worker/w1","value":{"entity_url":"/worker/w1","entity_type":"worker","status":"idle"},"headers":{"operation":"insert"}}`)
	cut := h.events("/boss/b")
	h.appendEvents("/boss/b", manifest("w2"))

	out := h.mustFork("/boss/b", `{"instance_id":"b2"}`)
	require.Len(t, out.Entities, 4)
	byURL := map[string]map[string]json.RawMessage{}
	for _, e := range out.Entities {
		byURL[str(t, e["url"])] = e
	}
	var w1, w2, g1 string
	for u, e := range byURL {
		switch {
		case strings.HasPrefix(u, "/worker/w1-fork-"):
			w1 = u
			require.Equal(t, "/boss/b2", str(t, e["parent"]))
		case strings.HasPrefix(u, "/worker/w2-fork-"):
			w2 = u
			require.Equal(t, "/boss/b2", str(t, e["parent"]))
		case strings.HasPrefix(u, "/worker/g1-fork-"):
			g1 = u
		}
	}
	require.NotEmpty(t, w1)
	require.NotEmpty(t, w2)
	require.Equal(t, w1, str(t, byURL[g1]["parent"]), "a grandchild's copy is under its parent's copy")
	require.JSONEq(t, `{"helper":"`+w1+`"}`, string(byURL["/boss/b2"]["spawn_args"]), "args naming a forked entity name its copy")
	require.Equal(t, "/boss/b2", str(t, h.getEntity(w1)["parent"]))

	evs := h.events("/boss/b2")
	var manifests, statuses []event
	for _, e := range evs {
		if e.Headers["forkedFrom"] == "" {
			continue
		}
		switch e.Type {
		case "manifest":
			manifests = append(manifests, e)
		case "child_status":
			statuses = append(statuses, e)
		}
	}
	require.Len(t, manifests, 4, "a delete and an insert per child")
	_, w1id, _ := strings.Cut(strings.TrimPrefix(w1, "/"), "/")
	require.Equal(t, "delete", manifests[0].Headers["operation"])
	require.Equal(t, "child:worker:w1", manifests[0].Key)
	require.Equal(t, "insert", manifests[1].Headers["operation"])
	require.Equal(t, "child:worker:"+w1id, manifests[1].Key)
	require.Equal(t, w1, str(t, manifests[1].Value["entity_url"]))
	require.Len(t, statuses, 1)
	require.Equal(t, w1, str(t, statuses[0].Value["entity_url"]))

	// at a pointer before w2's manifest entry, only w1 (and its child) come along
	p := `{"fork_pointer":{"offset":"` + cut[len(cut)-1].Headers["offset"] + `","sub_offset":1}}`
	require.Len(t, h.mustFork("/boss/b", p).Entities, 4, "a pointer at w2's manifest entry takes w2 along")
	p = `{"fork_pointer":{"offset":"` + cut[len(cut)-2].Headers["offset"] + `","sub_offset":1}}`
	out = h.mustFork("/boss/b", p)
	require.Len(t, out.Entities, 3)
	for _, e := range out.Entities[1:] {
		require.NotContains(t, str(t, e["url"]), "/worker/w2")
	}
	p = `{"fork_pointer":{"offset":null,"sub_offset":1}}`
	out = h.mustFork("/boss/b", p)
	require.Len(t, out.Entities, 1, "before any manifest entry no child comes along")
}

// TestForkWaitsForIdle: a fork without a pointer waits for the subtree to be idle; meanwhile
// sends to it are 409 FORK_IN_PROGRESS, and so is a second fork; it times out with 409
// FORK_WAIT_TIMEOUT naming the active entities.
func TestForkWaitsForIdle(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "top", nil)
	h.mustSpawn("chat", "kid", `{"parent":"/chat/top"}`)
	ctx := context.Background()
	require.NoError(t, h.srv.Registry.MarkRunning(ctx, "/chat/kid"))

	r := h.fork("/chat/top", `{"waitTimeoutMs":0}`)
	requireDetails(t, r, http.StatusConflict, "FORK_WAIT_TIMEOUT", "Timed out waiting for the subtree to become idle",
		detail{"/chat/kid", "is still running"})
	h.mustSend("/chat/top", `{"payload":"sends are fine again"}`)

	done := make(chan *response, 1)
	go func() { done <- h.fork("/chat/top", `{"instance_id":"later","waitTimeoutMs":60000}`) }()
	testwait.Until(t, "sends to be refused while the fork waits", func() bool {
		return h.send("/chat/kid", `{"payload":"x"}`).Status == http.StatusConflict
	}, 10*time.Second)
	requireError(t, h.send("/chat/top", `{"payload":"x"}`), http.StatusConflict, "FORK_IN_PROGRESS", "Entity subtree is being forked")
	requireError(t, h.fork("/chat/top", `{"waitTimeoutMs":0}`), http.StatusConflict, "FORK_IN_PROGRESS", "Entity subtree is being forked")
	select {
	case r := <-done:
		t.Fatalf("the fork finished while the subtree was busy: %d %s", r.Status, r.Body)
	default:
	}
	// the child finishes its run: the fork goes through, and sends are accepted again
	require.NoError(t, h.srv.Streams.WithTx(ctx, func(ctx context.Context, tx *streamdb.Tx) error {
		_, err := entity.MarkWakeDone(ctx, tx, "/chat/kid")
		return err
	}))
	r = <-done
	requireStatus(t, r, http.StatusCreated)
	h.mustSend("/chat/top", `{"payload":"after"}`)
	h.mustSend("/chat/kid", `{"payload":"after"}`)
	require.Equal(t, "idle", h.status("/chat/later"))
}

// TestForkUnderConcurrentSends: forks made while sends pour in hold exactly a prefix of
// the source: for a pointer fork, exactly the events up to the pointer; for a fork of
// the whole stream, the source's events up to some point and nothing after it. Sends
// either land (200) or are refused while a fork holds the entity (409 FORK_IN_PROGRESS).
func TestForkUnderConcurrentSends(t *testing.T) {
	h := setup(t, testserverQuiet())
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "src", nil)
	for i := range 20 {
		h.mustSend("/chat/src", fmt.Sprintf(`{"payload":"seed-%d"}`, i))
	}
	seed := h.events("/chat/src")

	var stop atomic.Bool
	var wg sync.WaitGroup
	var sent, refused atomic.Int64
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load() && i < 400; i++ {
				r := h.do(http.MethodPost, entitiesPath+"/chat/src/send", fmt.Sprintf(`{"payload":"w%d-%d"}`, w, i))
				switch r.Status {
				case http.StatusOK:
					sent.Add(1)
				case http.StatusConflict:
					if !strings.Contains(string(r.Body), "FORK_IN_PROGRESS") {
						t.Errorf("send: 409 %s", r.Body)
						return
					}
					refused.Add(1)
				default:
					t.Errorf("send: %d %s", r.Status, r.Body)
					return
				}
			}
		}()
	}
	var forks []string
	var pointerForks []struct {
		url  string
		keep int
	}
	for i := range 8 {
		if i%2 == 0 {
			out := h.mustFork("/chat/src", nil)
			forks = append(forks, str(t, out.Root["url"]))
			continue
		}
		keep := 5 + i
		out := h.mustFork("/chat/src", fmt.Sprintf(`{"fork_pointer":{"offset":"%s","sub_offset":%d}}`, seed[4].Headers["offset"], keep-5))
		pointerForks = append(pointerForks, struct {
			url  string
			keep int
		}{str(t, out.Root["url"]), keep})
	}
	stop.Store(true)
	wg.Wait()
	src := storedEvents(h.events("/chat/src"))
	for _, url := range forks {
		evs := h.events(url)
		last := evs[len(evs)-1]
		require.Equal(t, "entity_created", last.Type)
		require.Equal(t, "/chat/src", last.Headers["forkedFrom"])
		got := storedEvents(evs[:len(evs)-1])
		require.GreaterOrEqual(t, len(got), len(seed))
		require.Equal(t, src[:len(got)], got, "the fork %s is a prefix of its source", url)
	}
	for _, pf := range pointerForks {
		evs := h.events(pf.url)
		require.Len(t, evs, pf.keep+1, "a pointer fork holds exactly the events up to its pointer")
		require.Equal(t, src[:pf.keep], storedEvents(evs[:pf.keep]))
	}
	require.Positive(t, sent.Load())
	t.Logf("sends during the forks: %d landed, %d refused with FORK_IN_PROGRESS", sent.Load(), refused.Load())
}

// TestForkUnderAParentWithWake: the runtime's fork tool (ctx.fork) makes the copy a child
// of the forking entity and wakes it when the copy's run finishes; initialMessage lands
// in the copy's inbox from the parent.
func TestForkUnderAParentWithWake(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "src", nil)
	h.mustSpawn("chat", "boss", nil)
	out := h.mustFork("/chat/src", `{"parent":"/chat/boss","wake":{"subscriberUrl":"/chat/boss","condition":"runFinished","includeResponse":true},
		"initialMessage":"go on","tags":{"why":"try"}}`)
	root := str(t, out.Root["url"])
	require.Equal(t, "/chat/boss", str(t, out.Root["parent"]))
	evs := h.events(root)
	inbox := ofType(evs, "inbox")
	require.Len(t, inbox, 1)
	require.Equal(t, `"go on"`, string(inbox[0].Value["payload"]))
	require.Equal(t, "/chat/boss", str(t, inbox[0].Value["from"]))
	var n int
	require.NoError(t, h.srv.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM wake_registrations WHERE subscriber_url = '/chat/boss' AND source_url = $1`, root).Scan(&n))
	require.Equal(t, 1, n)
	// the registrations of the source come along with it
	h.mustSpawn("chat", "watched", nil)
	requireStatus(t, h.do(http.MethodPost, "/_electric/wake",
		`{"subscriberUrl":"/chat/src","sourceUrl":"/chat/watched","condition":"runFinished"}`), http.StatusNoContent)
	out = h.mustFork("/chat/src", `{"instance_id":"src2"}`)
	require.NoError(t, h.srv.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM wake_registrations WHERE subscriber_url = '/chat/src2' AND source_url = '/chat/watched'`).Scan(&n))
	require.Equal(t, 1, n)
}

// TestForkOfAGoHandledEntity: a copy of an entity whose type has an in-process handler
// is not woken for the inbox history it inherits: its handler sees only what is sent to
// the copy afterwards.
func TestForkOfAGoHandledEntity(t *testing.T) {
	type seen struct{ url, payload string }
	got := make(chan seen, 16)
	def := runtime.EntityDefinition{Type: "echo", Description: "records its messages", Handler: func(ctx *runtime.Context) error {
		if w, ok := ctx.Wake.(runtime.InboxWake); ok {
			got <- seen{ctx.Entity.URL, string(w.Payload)}
		}
		return nil
	}}
	h := setup(t, testserver.Options{QuietLogs: true, Definitions: []runtime.EntityDefinition{def}})
	h.mustSpawn("echo", "src", nil)
	h.mustSend("/echo/src", `{"payload":"one"}`)
	h.mustSend("/echo/src", `{"payload":"two"}`)
	for _, want := range []string{`"one"`, `"two"`} {
		select {
		case s := <-got:
			require.Equal(t, seen{"/echo/src", want}, s)
		case <-time.After(30 * time.Second):
			t.Fatalf("the source's handler did not get %s", want)
		}
	}
	testwait.Until(t, "the source to be idle", func() bool { return h.status("/echo/src") == "idle" }, 10*time.Second)

	h.mustFork("/echo/src", `{"instance_id":"copy"}`)
	h.mustSend("/echo/copy", `{"payload":"three"}`)
	select {
	case s := <-got:
		require.Equal(t, seen{"/echo/copy", `"three"`}, s, "the copy's first wake is its own message, not its history")
	case <-time.After(30 * time.Second):
		t.Fatal("the copy's handler did not get its message")
	}
}

// TestForkInheritedInboxEdits: a message the copy inherited is its own to edit (the edit
// finds it through the fork), and editing it in the copy leaves the source's as it was.
func TestForkInheritedInboxEdits(t *testing.T) {
	h := setup(t)
	h.registerType(`{"name":"chat","description":"d"}`)
	h.mustSpawn("chat", "src", nil)
	h.mustSend("/chat/src", `{"key":"k1","mode":"paused","payload":"held"}`)
	h.mustFork("/chat/src", `{"instance_id":"copy"}`)

	r := h.do(http.MethodPatch, entitiesPath+"/chat/copy/inbox/k1", `{"payload":"edited in the copy"}`)
	requireStatus(t, r, http.StatusOK)
	requireStatus(t, h.do(http.MethodPatch, entitiesPath+"/chat/copy/inbox/nope", `{"payload":"x"}`), http.StatusNotFound)
	require.Contains(t, string(h.readStream("/chat/copy").Last.Body), "edited in the copy")
	require.NotContains(t, string(h.readStream("/chat/src").Last.Body), "edited in the copy")
}
