package acp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/entityd/entityd/acp"
)

// rawAnswer is a JSON-RPC answer as it comes off the wire.
type rawAnswer struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// TestBadInput speaks raw JSON-RPC to the adapter: every bad message gets an error
// answer (none is dropped silently), and the connection goes on working.
func TestBadInput(t *testing.T) {
	srv := startServer(t)
	agentIn, in := io.Pipe()
	out, agentOut := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- acp.Serve(context.Background(), acp.Options{Server: srv.URL, EntityType: "assistant", EntityID: "w1"}, agentIn, agentOut)
	}()
	answers := make(chan rawAnswer, 16)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var a rawAnswer
			if json.Unmarshal(sc.Bytes(), &a) != nil {
				t.Errorf("the adapter wrote a line that is not JSON: %q", sc.Text())
				continue
			}
			answers <- a
		}
		close(answers)
	}()
	exchange := func(line string) rawAnswer {
		t.Helper()
		_, err := io.WriteString(in, line+"\n")
		require.NoError(t, err)
		select {
		case a := <-answers:
			return a
		case <-time.After(waitLimit):
			t.Fatalf("no answer to %s", line)
			return rawAnswer{}
		}
	}
	expectError := func(line, id string, code int) {
		t.Helper()
		a := exchange(line)
		require.NotNil(t, a.Error, "answer to %s: %+v", line, a)
		require.Equal(t, code, a.Error.Code, line)
		require.JSONEq(t, id, string(a.ID), line)
	}

	expectError(`{"jsonrpc":"2.0","id":1,"method":"initialize"`, `null`, -32700) // cut short
	expectError(`hello`, `null`, -32700)
	expectError(`[{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}]`, `null`, -32600)
	expectError(`{"jsonrpc":"1.0","id":3,"method":"initialize","params":{"protocolVersion":1}}`, `3`, -32600)
	expectError(`{"jsonrpc":"2.0","id":4}`, `4`, -32600)
	expectError(`{"jsonrpc":"2.0","id":{"x":1},"method":"initialize"}`, `null`, -32600)
	expectError(`{"jsonrpc":"2.0","id":5,"method":""}`, `5`, -32600)
	expectError(`{"jsonrpc":"2.0","id":6,"method":"no/such/method","params":{}}`, `6`, -32601)
	expectError(`{"jsonrpc":"2.0","id":"seven","method":"initialize","params":{"protocolVersion":"one"}}`, `"seven"`, -32602)
	expectError(`{"jsonrpc":"2.0","id":8,"method":"session/prompt","params":{"sessionId":"sess_x","prompt":[{"type":"text","text":"hi"}]}}`, `8`, -32602)
	expectError(`{"jsonrpc":"2.0","id":9,"method":"session/new","params":{"cwd":"/work","mcpServers":[]}}`, `9`, -32002) // no such entity

	// Still alive after all that.
	a := exchange(`{"jsonrpc":"2.0","id":10,"method":"initialize","params":{"protocolVersion":1}}`)
	require.Nil(t, a.Error)
	require.JSONEq(t, `10`, string(a.ID))
	var init struct {
		ProtocolVersion int `json:"protocolVersion"`
		AgentInfo       struct {
			Name string `json:"name"`
		} `json:"agentInfo"`
	}
	require.NoError(t, json.Unmarshal(a.Result, &init))
	require.Equal(t, 1, init.ProtocolVersion)
	require.Equal(t, "entityd", init.AgentInfo.Name)

	// An oversized line is answered, not fatal.
	expectError(`{"jsonrpc":"2.0","id":11,"method":"initialize","params":{"x":"`+strings.Repeat("a", 11<<20)+`"}}`, `null`, -32600)
	a = exchange(`{"jsonrpc":"2.0","id":12,"method":"initialize","params":{"protocolVersion":1}}`)
	require.Nil(t, a.Error)

	// session/new: its answer comes before the session's first update, so the editor
	// knows the session the commands belong to.
	a = exchange(`{"jsonrpc":"2.0","id":13,"method":"session/new","params":{"cwd":"/work","mcpServers":[],"_meta":{"entityd":{"spawn":true}}}}`)
	require.Nil(t, a.Error)
	require.JSONEq(t, `13`, string(a.ID))
	var created struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(t, json.Unmarshal(a.Result, &created))
	select {
	case n := <-answers:
		require.Equal(t, "session/update", n.Method)
		var p struct {
			SessionID string `json:"sessionId"`
			Update    struct {
				SessionUpdate string `json:"sessionUpdate"`
			} `json:"update"`
		}
		require.NoError(t, json.Unmarshal(n.Params, &p))
		require.Equal(t, created.SessionID, p.SessionID)
		require.Equal(t, "available_commands_update", p.Update.SessionUpdate)
	case <-time.After(waitLimit):
		t.Fatal("no available_commands_update")
	}

	require.NoError(t, in.Close())
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(waitLimit):
		t.Fatal("the adapter did not end after its stdin closed")
	}
	_ = agentOut.Close()
}
