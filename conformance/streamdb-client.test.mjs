// A real client against entityd: the official Durable Streams TypeScript client and
// StreamDB (@durable-streams/state with @tanstack/db) follow an entity's main stream live,
// over SSE and over long-poll, while composer_input messages are sent to it.
import { describe, expect, it } from "vitest"
import { createStateSchema, createStreamDB } from "@durable-streams/state/db"

const base = process.env.ENTITYD_URL
if (!base) throw new Error("ENTITYD_URL is not set; run through `make test-conformance`")

// StreamDB validates rows with Standard Schema validators; these tests check the rows
// themselves, so the validator lets everything through.
const anyRow = { "~standard": { version: 1, vendor: "entityd-test", validate: (value) => ({ value }) } }
const entityState = () =>
  createStateSchema({
    inbox: { schema: anyRow, type: "inbox", primaryKey: "key" },
    slashCommands: { schema: anyRow, type: "slash_command", primaryKey: "key" },
    entityCreated: { schema: anyRow, type: "entity_created", primaryKey: "key" },
  })

async function call(method, path, body) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null }
}

const staticCommands = [
  { name: "quickstart", description: "Start here" },
  { name: "search", description: "Search", arguments: [{ name: "query", type: "string", required: true }] },
]

function composer(source, nodes) {
  return { type: "composer_input", payload: { source, nodes } }
}

async function waitFor(check, what, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (check()) return
    await new Promise((r) => setTimeout(r, 20))
  }
  throw new Error(`timed out waiting for ${what}`)
}

describe("StreamDB follows an entity", () => {
  const type = `client-test-${Date.now()}`

  it("registers the entity type", async () => {
    const res = await call("POST", "/_electric/entity-types", {
      name: type,
      description: "StreamDB client test",
      slash_commands: staticCommands,
    })
    expect(res.status).toBe(201)
  })

  for (const live of ["sse", "long-poll"]) {
    it(`materializes inbox messages in order and the static slash commands (live: ${live})`, async () => {
      const id = `e-${live}-${Date.now()}`
      const spawn = await call("PUT", `/_electric/entities/${type}/${id}`, {})
      expect(spawn.status).toBe(201)

      const db = createStreamDB({
        streamOptions: { url: `${base}/${type}/${id}/main`, contentType: "application/json" },
        live,
        state: entityState(),
      })
      try {
        await db.preload()

        // The static commands are there from the first up-to-date batch, as complete rows.
        const commands = [...db.collections.slashCommands.toArray].sort((a, b) => a.key.localeCompare(b.key))
        expect(commands.map((c) => c.key)).toEqual(["quickstart", "search"])
        expect(commands[1]).toMatchObject({
          key: "search",
          name: "search",
          description: "Search",
          arguments: [{ name: "query", type: "string", required: true }],
          source: "static",
          owner: null,
          version: null,
          dynamic_layers: null,
        })
        expect(db.collections.entityCreated.toArray).toHaveLength(1)
        expect(db.collections.inbox.toArray).toHaveLength(0)

        // Three composer_input messages, each awaited by its txid on the live stream.
        const sources = ["/quickstart please", "/search streams", "plain text 😀 after"]
        const txids = []
        for (const source of sources) {
          const nodes = source.startsWith("/")
            ? [{ kind: "slash_command", start: 0, end: source.indexOf(" "), raw: source.slice(0, source.indexOf(" ")), name: source.slice(1, source.indexOf(" ")) }]
            : []
          const res = await call("POST", `/_electric/entities/${type}/${id}/send`, composer(source, nodes))
          expect(res.status).toBe(200)
          txids.push(res.body.txid)
          await db.utils.awaitTxId(res.body.txid, 10000)
        }
        await waitFor(() => db.collections.inbox.size === 3, "three inbox rows")

        const inbox = [...db.collections.inbox.toArray].sort((a, b) => a._seq - b._seq)
        expect(inbox.map((row) => row.payload.source)).toEqual(sources)
        for (const row of inbox) {
          expect(row.message_type).toBe("composer_input")
          expect(row.mode).toBe("immediate")
          expect(row.from).toBe("/principal/system%3Adev-local")
        }
        expect(new Set(txids).size).toBe(3)
      } finally {
        db.close()
      }
    })
  }
})
