// An entity's MCP server through the official TypeScript SDK's client
// (@modelcontextprotocol/sdk: Client over StreamableHTTPClientTransport), as an editor
// uses it: initialize, list the prompts (the entity's slash commands), get one with
// arguments, deliver it with the send tool as the prompt's second message says, see the
// composer_input on the entity's main stream, retry it, follow a command added and
// removed while connected (notifications/prompts/list_changed), complete an argument,
// and end the session.
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { base } from "./lib.mjs"

// A principal of its own, so that no other test's MCP sessions count against its cap.
const who = `user:mcp-sdk-${Date.now()}`

async function as(method, path, body) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { "content-type": "application/json", "electric-principal": who },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null }
}

// counter counts events and lets a test wait until there have been n of them (failing
// after 10 s with what it waited for).
function counter() {
  let count = 0
  let waiting = []
  return {
    get count() {
      return count
    },
    hit() {
      count++
      this.last = arguments[0]
      for (const wake of waiting.splice(0)) wake()
    },
    async atLeast(n, what) {
      const deadline = Date.now() + 10000
      while (count < n) {
        const left = deadline - Date.now()
        if (left <= 0) throw new Error(`timed out waiting for ${what}`)
        let timer
        await new Promise((r) => {
          waiting.push(r)
          timer = setTimeout(r, left)
        })
        clearTimeout(timer)
      }
    },
  }
}

describe("an entity through the official MCP TypeScript SDK client", () => {
  const type = `mcp-sdk-${Date.now()}`
  const entity = `/${type}/e1`
  const mcpURL = `${base}/_electric/entities/${type}/e1/mcp`
  const listChanged = counter()
  const closed = counter()
  const updated = counter() // resources/updated notifications
  let client, transport, sessionId
  let notificationStream // resolves with the GET notification stream's response
  const requests = [] // [method, status] of every HTTP request the transport made

  beforeAll(async () => {
    const reg = await as("POST", "/_electric/entity-types", {
      name: type,
      description: "MCP SDK client test",
      inbox_schemas: { note: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] } },
      slash_commands: [
        { name: "pr-review", description: "Review a pull request", arguments: [
          { name: "number", type: "number", required: true, description: "the pull request" },
          { name: "include_tests", type: "boolean" }] },
        { name: "quickstart", description: "Start here" },
      ],
    })
    expect(reg.status).toBe(201)
    expect((await as("PUT", `/_electric/entities/${type}/e1`, {})).status).toBe(201)

    let opened
    notificationStream = new Promise((r) => (opened = r))
    transport = new StreamableHTTPClientTransport(new URL(mcpURL), {
      requestInit: { headers: { "electric-principal": who } },
      fetch: async (url, init) => {
        const res = await fetch(url, init)
        const method = init?.method ?? "GET"
        requests.push([method, res.status])
        if (method === "GET") opened(res)
        return res
      },
    })
    client = new Client({ name: "entityd-sdk-test", version: "1.0.0" }, {
      capabilities: {},
      // resources/updated, by URI
      // no refresh and no debounce: onChanged runs once per notification
      listChanged: { prompts: { autoRefresh: false, debounceMs: 0, onChanged: () => listChanged.hit() } },
    })
    client.onclose = () => closed.hit()
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updated.hit(n.params.uri))
    await client.connect(transport)
    sessionId = transport.sessionId
  })

  afterAll(async () => {
    await client?.close()
  })

  it("initializes at 2025-11-25 with prompts that change, tools and completions", async () => {
    expect(transport.protocolVersion).toBe("2025-11-25")
    expect(sessionId).toMatch(/^\S{16,}$/)
    expect(client.getServerVersion()).toEqual({ name: "entityd", title: `entityd ${entity}`, version: "1" })
    const caps = client.getServerCapabilities()
    // only what this test relies on: other capabilities may be added
    expect(caps.prompts).toEqual({ listChanged: true })
    expect(caps.tools).toEqual({ listChanged: true })
    expect(caps.resources).toEqual({ subscribe: true })
    expect(caps.completions).toEqual({})
    expect(client.getInstructions()).toContain(`slash commands of the entity ${entity}`)
    // the notification stream the client opened after initializing
    const stream = await notificationStream
    expect(stream.status).toBe(200)
    expect(stream.headers.get("content-type")).toMatch(/^text\/event-stream/)
  })

  it("lists the entity's commands as prompts", async () => {
    const { prompts, nextCursor } = await client.listPrompts()
    expect(nextCursor).toBeUndefined()
    expect(prompts).toEqual([
      { name: "pr-review", title: "/pr-review", description: "Review a pull request", arguments: [
        { name: "number", description: "the pull request (number)", required: true },
        { name: "include_tests", description: "boolean" }] },
      { name: "quickstart", title: "/quickstart", description: "Start here", arguments: [
        { name: "input", description: "Free text after the command" }] },
    ])
  })

  it("gets a prompt, delivers it with send as the prompt says, once, and the retry answers the same offset", async () => {
    const got = await client.getPrompt({ name: "pr-review", arguments: { number: "7", include_tests: "true" } })
    expect(got.description).toBe("Review a pull request")
    expect(got.messages).toHaveLength(2)
    expect(got.messages[0]).toEqual({ role: "user", content: { type: "text", text: "/pr-review 7 true" } })
    expect(got.messages[1].role).toBe("user")
    const instruction = got.messages[1].content.text
    expect(instruction).toContain(`the command /pr-review of the entity ${entity}`)
    expect(instruction).toContain("call this server's send tool with exactly these arguments:")
    const line = instruction.split("\n").find((l) => l.startsWith("{"))
    const args = JSON.parse(line)
    expect(args).toEqual({ prompt: "pr-review", arguments: { number: "7", include_tests: "true" },
      key: expect.stringMatching(/^prompt-[0-9a-f]{16}$/) })

    // the tool call the model makes
    const sent = await client.callTool({ name: "send", arguments: args })
    expect(sent.isError).toBeFalsy()
    expect(sent.structuredContent).toEqual({ txid: expect.any(String), offset: expect.stringMatching(/^\d{16}_\d{16}$/) })
    expect(JSON.parse(sent.content[0].text)).toEqual(sent.structuredContent)

    // the composer_input on the entity's main stream, read over HTTP
    const inbox = async () => {
      const read = await as("GET", `${entity}/main?offset=-1`)
      expect(read.status).toBe(200)
      return read.body.filter((e) => e.type === "inbox" && e.key === args.key)
    }
    const [event, ...more] = await inbox()
    expect(more).toEqual([])
    expect(event.headers.offset).toBe(sent.structuredContent.offset)
    expect(event.headers.txid).toBe(sent.structuredContent.txid)
    expect(event.value.message_type).toBe("composer_input")
    expect(event.value.from).toBe(`/principal/${encodeURIComponent(who)}`)
    expect(event.value.payload).toEqual({ source: "/pr-review 7 true", nodes: [
      { kind: "slash_command", start: 0, end: 10, raw: "/pr-review", name: "pr-review" }] })

    // a model retrying the call: the same answer, nothing appended
    const again = await client.callTool({ name: "send", arguments: args })
    expect(again.isError).toBeFalsy()
    expect(again.structuredContent).toEqual(sent.structuredContent)
    expect(await inbox()).toHaveLength(1)
    // the same key for another message is refused
    const reused = await client.callTool({ name: "send", arguments: { ...args, arguments: { number: "8" } } })
    expect(reused.isError).toBe(true)
    expect(reused.content[0].text).toContain("IDEMPOTENCY_KEY_REUSED")
    expect(await inbox()).toHaveLength(1)
  })

  it("refuses a bad invocation: -32602 from prompts/get, a tool error from send", async () => {
    await expect(client.getPrompt({ name: "pr-review", arguments: { include_tests: "true" } }))
      .rejects.toMatchObject({ code: -32602, message: expect.stringContaining(`needs argument "number"`) })
    await expect(client.getPrompt({ name: "no-such-command" })).rejects.toMatchObject({ code: -32602 })
    const bad = await client.callTool({ name: "send", arguments: { prompt: "pr-review", arguments: { number: "seven" } } })
    expect(bad.isError).toBe(true)
    expect(bad.content[0].text).toContain(`argument "number" of prompt "pr-review" must be a number`)
  })

  it("hears notifications/prompts/list_changed when a command is added and removed while connected", async () => {
    // the notification travels on the GET stream: it must be open before the change
    expect((await notificationStream).ok).toBe(true)
    const before = listChanged.count
    const put = await as("PUT", `/_electric/entities/${type}/e1/slash-commands/deploy?owner=sdk-test`,
      { description: "Deploy a branch", arguments: [{ name: "branch", type: "string", required: true }] })
    expect(put.status).toBe(200)
    await listChanged.atLeast(before + 1, "list_changed after adding /deploy")
    const { prompts } = await client.listPrompts()
    expect(prompts.map((p) => p.name)).toEqual(["deploy", "pr-review", "quickstart"])
    expect(prompts[0]).toEqual({ name: "deploy", title: "/deploy", description: "Deploy a branch",
      arguments: [{ name: "branch", description: "string", required: true }] })

    const removed = listChanged.count
    const del = await as("DELETE", `/_electric/entities/${type}/e1/slash-commands/deploy?owner=sdk-test`)
    expect(del.status).toBe(200)
    await listChanged.atLeast(removed + 1, "list_changed after removing /deploy")
    expect((await client.listPrompts()).prompts.map((p) => p.name)).toEqual(["pr-review", "quickstart"])
  })

  it("sends a typed message with its message-type tool and follows it in the timeline resource", async () => {
    const timeline = `entityd://entity${entity}/timeline`
    const state = `entityd://entity${entity}/state`
    const { resources } = await client.listResources()
    expect(resources.map((r) => r.uri).sort()).toEqual([state, timeline])
    await client.subscribeResource({ uri: timeline })
    const before = updated.count

    const { tools } = await client.listTools()
    const note = tools.find((t) => t.name === "note")
    expect(note.inputSchema).toEqual({ type: "object", properties: { n: { type: "integer" } }, required: ["n"] })
    const sent = await client.callTool({ name: "note", arguments: { n: 42 } })
    expect(sent.isError).toBeFalsy()
    expect(sent.structuredContent).toEqual({ txid: expect.any(String), offset: expect.stringMatching(/^\d{16}_\d{16}$/) })
    const refused = await client.callTool({ name: "note", arguments: { n: "many" } })
    expect(refused.isError).toBe(true)
    expect(refused.content[0].text).toContain("SCHEMA_VALIDATION_FAILED")

    await updated.atLeast(before + 1, "resources/updated after the note")
    expect(updated.last).toBe(timeline)
    const read = await client.readResource({ uri: timeline })
    expect(read.contents[0]).toMatchObject({ uri: timeline, mimeType: "application/json" })
    const doc = JSON.parse(read.contents[0].text)
    expect(doc.entity).toBe(entity)
    const last = doc.events.at(-1)
    expect(last.offset).toBe(sent.structuredContent.offset)
    expect(last.event.value).toMatchObject({ message_type: "note", payload: { n: 42 }, from: `/principal/${encodeURIComponent(who)}` })
    const st = JSON.parse((await client.readResource({ uri: state })).contents[0].text)
    expect(Object.values(st.collections.inbox).map((m) => m.message_type)).toContain("note")
    await client.unsubscribeResource({ uri: timeline })
  })

  it("completes a boolean argument and nothing else", async () => {
    const complete = (name, value) => client.complete({ ref: { type: "ref/prompt", name: "pr-review" }, argument: { name, value } })
    expect((await complete("include_tests", "")).completion).toEqual({ values: ["true", "false"], total: 2 })
    expect((await complete("include_tests", "f")).completion).toEqual({ values: ["false"], total: 1 })
    // no values; total is optional and the Go SDK leaves a zero out
    expect((await complete("number", "1")).completion).toEqual({ values: [] })
    await expect(client.complete({ ref: { type: "ref/prompt", name: "no-such-command" }, argument: { name: "x", value: "" } }))
      .rejects.toMatchObject({ code: -32602 })
  })

  it("ends the session with DELETE, after which the session is gone", async () => {
    await transport.terminateSession()
    expect(transport.sessionId).toBeUndefined()
    expect(requests.filter(([m]) => m === "DELETE")).toEqual([["DELETE", 204]])
    await client.close()
    await closed.atLeast(1, "the client's onclose")
    const stale = await fetch(mcpURL, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream",
        "electric-principal": who, "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "ping" }),
    })
    expect(stale.status).toBe(404)
  })
})
