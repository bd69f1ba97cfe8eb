// `entityd acp` driven by the official ACP TypeScript SDK, as an editor drives it: the
// SDK's client app spawns the built binary (bin/entityd acp) and speaks ACP over its
// stdin and stdout. The entity is a demo assistant, served by a second entityd on the
// suite's database (the suite's own runs without the demo), whose Go handler answers
// every message by saying how it read it. The client opens a session, prompts a slash
// command and reads the reply as it streams back; a second adapter process (an editor
// started again) lists the sessions and loads that one, which replays the exchange
// before the answer; then the parameter checks: -32602 for a relative cwd and an empty
// prompt, -32002 for a session that names no entity.
import { spawn } from "node:child_process"
import { Readable, Writable } from "node:stream"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as acp from "@agentclientprotocol/sdk"
import { startEntityd, waitFor } from "./lib.mjs"

const bin = fileURLToPath(new URL("../bin/entityd", import.meta.url))
const protocolVersion = acp.PROTOCOL_VERSION

// adapter spawns `entityd acp` for entity against server and connects the SDK's client
// app to it. It keeps every session/update per session in arrival order; run(op) runs op
// with the SDK's ClientContext, then closes the adapter's stdin.
function adapter(server, entity, ...flags) {
  const proc = spawn(bin, ["acp", "--entity", entity, "--server", server, "--log-level", "warn", ...flags],
    { stdio: ["pipe", "pipe", "inherit"] })
  const exited = new Promise((resolve) => proc.once("exit", (code) => resolve(code)))
  const updates = new Map()
  const app = acp.client().onNotification("session/update", ({ params }) => {
    if (!updates.has(params.sessionId)) updates.set(params.sessionId, [])
    updates.get(params.sessionId).push(params.update)
  })
  const stream = acp.ndJsonStream(Writable.toWeb(proc.stdin), Readable.toWeb(proc.stdout))
  return {
    updates: (id) => updates.get(id) ?? [],
    // take returns the session's updates received so far and forgets them.
    take(id) {
      const u = updates.get(id) ?? []
      updates.set(id, [])
      return u
    },
    // The SDK ends its connection after op but leaves the transport open: closing the
    // adapter's stdin is the editor going away, after which the adapter exits.
    async run(op) {
      try {
        return await app.connectWith(stream, op)
      } finally {
        proc.stdin.end()
      }
    },
    exited,
  }
}

// transcript is what a list of updates shows: its user and agent message chunks.
const transcript = (updates) =>
  updates.filter((u) => u.sessionUpdate === "user_message_chunk" || u.sessionUpdate === "agent_message_chunk")
    .map((u) => [u.sessionUpdate === "user_message_chunk" ? "user" : "agent", u.content.text])

const commandNames = (updates) =>
  updates.filter((u) => u.sessionUpdate === "available_commands_update").map((u) => u.availableCommands.map((c) => c.name))

async function refusal(promise) {
  const err = await promise.then(() => null, (e) => e)
  expect(err, "the request was expected to fail").toBeInstanceOf(acp.RequestError)
  return err
}

describe("entityd acp through the official ACP TypeScript SDK", () => {
  const entity = `assistant/acp-sdk-${Date.now()}`
  const url = `/${entity}`
  let server

  beforeAll(async () => {
    server = await startEntityd([]) // with the demo assistant
  }, 30000)

  afterAll(async () => {
    await server?.stop()
  })

  it("prompts a slash command, then lists and loads the session in a new adapter", async () => {
    const first = adapter(server.url, entity, "--spawn")
    const live = await first.run(async (ctx) => {
      const init = await ctx.request("initialize", { protocolVersion, clientCapabilities: {} })
      expect(init.agentCapabilities.loadSession).toBe(true)
      expect(init.agentCapabilities.sessionCapabilities.list).toEqual({})

      const { sessionId } = await ctx.request("session/new", { cwd: "/tmp", mcpServers: [] })
      expect(sessionId).toBe(url) // a session is its entity
      await waitFor(() => commandNames(first.updates(sessionId)).length > 0, "available_commands_update")
      expect(commandNames(first.take(sessionId))).toEqual([["pr-review", "quickstart", "search"]])

      const res = await ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/pr-review 42" }] })
      expect(res.stopReason).toBe("end_turn")
      const reply = transcript(first.take(sessionId)).map(([, text]) => text).join("")
      expect(reply).toContain(`Command /pr-review with input "42"`)
      return reply
    })
    expect(await first.exited).toBe(0)

    const later = adapter(server.url, entity)
    await later.run(async (ctx) => {
      await ctx.request("initialize", { protocolVersion, clientCapabilities: {} })

      // The session is listed (among the other assistants of the database, page by page).
      let listed
      let cursor
      do {
        const page = await ctx.request("session/list", { cwd: "/tmp", ...(cursor ? { cursor } : {}) })
        listed = page.sessions.find((s) => s.sessionId === url)
        cursor = page.nextCursor
      } while (!listed && cursor)
      expect(listed).toMatchObject({ sessionId: url, cwd: "/tmp", title: url, _meta: { entityd: { status: "idle" } } })
      expect(Date.parse(listed.updatedAt)).toBeGreaterThan(Date.now() - 10 * 60 * 1000)

      // The replay comes before the answer: the exchange, user message then reply.
      const loaded = await ctx.request("session/load", { sessionId: url, cwd: "/tmp", mcpServers: [] })
      expect(loaded).toEqual({ _meta: { entityd: { stream_session: expect.stringMatching(/^[0-9a-f]{24}$/) } } })
      expect(transcript(later.updates(url))).toEqual([["user", "/pr-review 42"], ["agent", live]])
      await waitFor(() => commandNames(later.updates(url)).length > 0, "available_commands_update after the load")
      expect(commandNames(later.take(url))).toEqual([["pr-review", "quickstart", "search"]])

      // The loaded session takes prompts like a new one.
      const res = await ctx.request("session/prompt", { sessionId: url, prompt: [{ type: "text", text: "again /quickstart" }] })
      expect(res.stopReason).toBe("end_turn")
      expect(transcript(later.take(url)).map(([, text]) => text).join("")).toContain(`Command /quickstart`)
    })
    expect(await later.exited).toBe(0)
  })

  it("refuses a relative cwd and an empty prompt with -32602, and a session that names no entity with -32002", async () => {
    const a = adapter(server.url, entity, "--spawn")
    await a.run(async (ctx) => {
      await ctx.request("initialize", { protocolVersion, clientCapabilities: {} })
      expect((await refusal(ctx.request("session/new", { cwd: "relative/dir", mcpServers: [] }))).code).toBe(-32602)
      expect((await refusal(ctx.request("session/load", { sessionId: url, cwd: "relative/dir", mcpServers: [] }))).code).toBe(-32602)
      expect((await refusal(ctx.request("session/list", { cwd: "relative/dir" }))).code).toBe(-32602)

      const { sessionId } = await ctx.request("session/new", { cwd: "/tmp", mcpServers: [] })
      expect((await refusal(ctx.request("session/prompt", { sessionId, prompt: [] }))).code).toBe(-32602)
      expect((await refusal(ctx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "" }] }))).code).toBe(-32602)

      const missing = await refusal(ctx.request("session/load", { sessionId: "/assistant/nobody-here", cwd: "/tmp", mcpServers: [] }))
      expect(missing.code).toBe(-32002)
      expect((await refusal(ctx.request("session/load", { sessionId: "sess_0123", cwd: "/tmp", mcpServers: [] }))).code).toBe(-32002)
    })
    expect(await a.exited).toBe(0)
  })
})
