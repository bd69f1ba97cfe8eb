// The slash-command picker's view, with the official StreamDB client: one StreamDB follows
// the entity's slash-command collection stream (snapshot, then live changes) and another
// follows its main stream. After every change made over HTTP, the materialized
// slashCommands rows must equal the server's effective rows exactly — in particular no
// stale owner or dynamic_layers survive StreamDB's shallow merge of updates.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createStateSchema, createStreamDB } from "@durable-streams/state/db"

const base = process.env.ENTITYD_URL
if (!base) throw new Error("ENTITYD_URL is not set; run through `make test-conformance`")

const anyRow = { "~standard": { version: 1, vendor: "entityd-test", validate: (value) => ({ value }) } }
const commandsState = () => createStateSchema({ slashCommands: { schema: anyRow, type: "slash_command", primaryKey: "key" } })

async function call(method, path, body) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null }
}

// Rows as StreamDB holds them, without its bookkeeping fields (_seq, $key, $synced, ...), sorted by key.
function materialized(db) {
  return [...db.collections.slashCommands.toArray]
    .map((row) => Object.fromEntries(Object.entries(row).filter(([k]) => !k.startsWith("_") && !k.startsWith("$"))))
    .sort((a, b) => a.key.localeCompare(b.key))
}

async function waitForEqual(read, expected, what) {
  const deadline = Date.now() + 10000
  let last
  while (Date.now() < deadline) {
    last = read()
    try {
      expect(last).toEqual(expected)
      return
    } catch {
      await new Promise((r) => setTimeout(r, 20))
    }
  }
  expect(last, what).toEqual(expected)
}

describe("slashCommands through StreamDB", () => {
  const type = `picker-${Date.now()}`
  const id = "p1"
  const url = `/${type}/${id}`
  let collection, main

  beforeAll(async () => {
    const reg = await call("POST", "/_electric/entity-types", {
      name: type,
      description: "picker test",
      slash_commands: [
        { name: "search", description: "Search (static)", arguments: [{ name: "query", type: "string", required: true }] },
        { name: "quickstart", description: "Start here" },
      ],
    })
    expect(reg.status).toBe(201)
    expect((await call("PUT", `/_electric/entities/${type}/${id}`, {})).status).toBe(201)
    collection = createStreamDB({
      streamOptions: { url: `${base}${url}/slash-commands`, contentType: "application/json" },
      live: "sse",
      state: commandsState(),
    })
    main = createStreamDB({
      streamOptions: { url: `${base}${url}/main`, contentType: "application/json" },
      live: "long-poll",
      state: commandsState(),
    })
    await Promise.all([collection.preload(), main.preload()])
  })

  afterAll(() => {
    collection?.close()
    main?.close()
  })

  async function expectInSync(step) {
    const list = await call("GET", `/_electric/entities/${type}/${id}/slash-commands`)
    expect(list.status).toBe(200)
    const expected = [...list.body].sort((a, b) => a.key.localeCompare(b.key))
    await waitForEqual(() => materialized(collection), expected, `collection stream after ${step}`)
    await waitForEqual(() => materialized(main), expected, `main stream after ${step}`)
    return expected
  }

  async function put(name, owner, body) {
    const res = await call("PUT", `/_electric/entities/${type}/${id}/slash-commands/${name}?owner=${owner}`, body)
    expect(res.status).toBe(200)
    return res.body
  }

  async function del(name, owner) {
    const res = await call("DELETE", `/_electric/entities/${type}/${id}/slash-commands/${name}?owner=${owner}`)
    expect(res.status).toBe(200)
    return res.body
  }

  it("starts with the static rows", async () => {
    const rows = await expectInSync("spawn")
    expect(rows.map((r) => [r.key, r.source])).toEqual([["quickstart", "static"], ["search", "static"]])
  })

  it("a dynamic layer overrides the static command", async () => {
    await put("search", "local", { description: "Search (local)", version: "1" })
    const rows = await expectInSync("register local")
    expect(rows[1]).toMatchObject({ source: "dynamic", owner: "local", description: "Search (local)", arguments: null })
  })

  it("the newest layer wins and a new owner can add names", async () => {
    await put("search", "skills", { description: "Search (skills)" })
    await put("deploy", "skills", { description: "Deploy", arguments: [{ name: "env", type: "string" }] })
    const rows = await expectInSync("register skills")
    const search = rows.find((r) => r.key === "search")
    expect(search.owner).toBe("skills")
    expect(search.dynamic_layers.map((l) => l.owner)).toEqual(["local", "skills"])
  })

  it("an identical registration writes nothing", async () => {
    const res = await put("search", "skills", { description: "Search (skills)" })
    expect(res.changed).toBe(false)
    await expectInSync("identical register")
  })

  it("removing the only layer of a dynamic-only name deletes the row", async () => {
    await del("deploy", "skills")
    const rows = await expectInSync("unregister deploy")
    expect(rows.map((r) => r.key)).toEqual(["quickstart", "search"])
  })

  it("unregistering the top layer reveals the one below", async () => {
    await del("search", "skills")
    const rows = await expectInSync("unregister skills")
    expect(rows[1]).toMatchObject({ source: "dynamic", owner: "local", description: "Search (local)" })
    expect(rows[1].dynamic_layers.map((l) => l.owner)).toEqual(["local"])
  })

  it("unregistering the last layer reveals the static command with no stale fields", async () => {
    await del("search", "local")
    const rows = await expectInSync("unregister local")
    expect(rows[1]).toMatchObject({ source: "static", owner: null, version: null, dynamic_layers: null })
    expect(rows[1].arguments).toEqual([{ name: "query", type: "string", required: true }])
  })

  it("re-registering the type reconciles the live entity's static commands", async () => {
    await put("quickstart", "local", { description: "Quickstart (local)" })
    const reg = await call("POST", "/_electric/entity-types", {
      name: type,
      description: "picker test v2",
      slash_commands: [{ name: "search", description: "Search v2" }, { name: "help" }],
    })
    expect(reg.status).toBe(201)
    const rows = await expectInSync("type re-registration")
    expect(rows.map((r) => [r.key, r.source])).toEqual([["help", "static"], ["quickstart", "dynamic"], ["search", "static"]])
    await del("quickstart", "local")
    const after = await expectInSync("unregister a dynamic command whose static one was removed")
    expect(after.map((r) => r.key)).toEqual(["help", "search"])
  })
})
