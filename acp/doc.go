// Package acp is entityd's Agent Client Protocol adapter: an editor (any ACP client)
// launches `entityd acp --entity <type>/<id>` and talks JSON-RPC over the process's
// stdin and stdout; the adapter talks HTTP to an entityd server, so one entity looks to
// the editor like a coding agent.
//
// The pieces, one file each:
//
//   - entityapi.go: the few calls of the entityd HTTP API the adapter needs (spawn, send,
//     signal, wake status, slash-command list, stream reads), with the caller's
//     credentials on every request;
//   - commands.go: slash-command rows → ACP available commands (with input hints);
//   - commandfeed.go: the entity's slash-command collection followed live (long-poll),
//     shared by every session of the process;
//   - prompt.go: an ACP prompt → one composer_input payload (slash_command and file
//     nodes at UTF-16 spans), checked against the server's limits before it is sent;
//   - reply.go: the entity's main stream followed from just after the message until the
//     handler's run for it ends, as agent_message_chunk updates;
//   - agent.go, unsupported.go: the acp.Agent the SDK calls (sessions, prompts, cancel);
//   - sessionid.go: a session id is its entity's URL, so a session can be found again;
//   - load.go, replay.go: session/load — the entity's history read page by page into a
//     bounded history and replayed as message chunks before the answer;
//   - list.go: session/list — the entities of the adapter's type, paged;
//   - entityconn.go: the API client and command feed of an entity other than the
//     adapter's own, shared by the sessions loaded on it;
//   - editortools*.go: the stdio MCP servers a session names, run here and offered to the
//     entity's handler, whose editor_tool_call events are run once each and answered with
//     editor_tool_result messages (editortools.go tells the whole flow);
//   - wire.go: stdin and stdout around the SDK (JSON-RPC parse errors, output ordering);
//   - serve.go: Serve, which wires them to a pair of streams.
package acp
