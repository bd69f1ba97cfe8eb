// The shapes Electric's web UI (agents-server-ui) reads, through @electric-sql/client as
// the UI's collections read them: the entities shape with the UI's exact column list,
// a spawn's and a signal's txid awaited the way @tanstack/electric-db-collection's
// awaitTxId does (headers.txids of change messages, or a snapshot-end whose snapshot saw
// it, with isVisibleInSnapshot), and the runners, users, entity_effective_permissions
// and runner_runtime_diagnostics shapes scoped to the principal (Electric-Principal).
import { describe, expect, it } from "vitest"
import { base, waitFor } from "./lib.mjs"
import { ShapeStream, isChangeMessage, isControlMessage, isVisibleInSnapshot } from "@electric-sql/client"

const shapeUrl = `${base}/_electric/electric/v1/shape`
const UI_ENTITY_COLUMNS = ["url", "type", "status", "tags", "spawn_args", "sandbox", "dispatch_policy", "parent",
  "created_by", "type_revision", "inbox_schemas", "state_schemas", "created_at", "updated_at"]

async function as(principal, method, path, body) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { "content-type": "application/json", "electric-principal": principal },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null }
}

// follow materialises a shape and keeps what awaitTxId needs: the txids of the change
// messages and the snapshots that ended a snapshot.
function follow(principal, params) {
  const rows = new Map()
  const txids = new Set()
  const snapshots = []
  let upToDate = false
  const stream = new ShapeStream({ url: shapeUrl, params, headers: { "electric-principal": principal },
    parser: { int8: (v) => Number(v) } })
  stream.subscribe((messages) => {
    for (const m of messages) {
      if (isChangeMessage(m)) {
        m.headers.txids?.forEach((t) => txids.add(t))
        if (m.headers.operation === "delete") rows.delete(m.key)
        else rows.set(m.key, { ...rows.get(m.key), ...m.value })
      } else if (isControlMessage(m)) {
        if (m.headers.control === "snapshot-end") snapshots.push(m.headers)
        if (m.headers.control === "up-to-date") upToDate = true
      }
    }
  })
  return {
    rows: () => [...rows.values()],
    ready: () => waitFor(() => upToDate, `the ${params.table} shape to be up to date`),
    awaitTxId: (txid) => {
      expect(typeof txid).toBe("number") // awaitTxId throws on anything else
      return waitFor(() => txids.has(txid) || snapshots.some((s) => isVisibleInSnapshot(txid, s)), `txid ${txid}`)
    },
    stop: () => stream.unsubscribeAll(),
  }
}

describe("the shapes Electric's web UI reads", () => {
  it("serves the UI's entity columns, and the spawn's and signal's txids arrive", async () => {
    const who = `user:ui-${Date.now()}`
    const type = `uitype-${Date.now()}`
    expect((await as(who, "POST", "/_electric/entity-types", { name: type, description: "ui",
      inbox_schemas: { note: { type: "object" } } })).status).toBe(201)
    const entities = follow(who, { table: "entities", columns: UI_ENTITY_COLUMNS })
    await entities.ready()

    const spawn = await as(who, "PUT", `/_electric/entities/${type}/one`, {})
    expect(spawn.status).toBe(201)
    await entities.awaitTxId(spawn.body.txid)
    const row = entities.rows().find((r) => r.url === `/${type}/one`)
    expect(row).toBeDefined()
    expect(Object.keys(row).sort()).toEqual([...UI_ENTITY_COLUMNS].sort())
    expect(row.spawn_args).toEqual({}) // the UI's schema refuses null
    expect(row.sandbox).toBeNull()
    expect(row.dispatch_policy).toBeNull()
    expect(row.inbox_schemas).toEqual({ note: { type: "object" } })
    expect(row.created_by).toBe(`/principal/${encodeURIComponent(who)}`)
    expect(typeof row.created_at).toBe("number")

    // a signal that leaves the status as it is still answers a txid that arrives
    const sig = await as(who, "POST", `/_electric/entities/${type}/one/signal`, { signal: "SIGUSR" })
    expect(sig.status).toBe(200)
    await entities.awaitTxId(sig.body.txid)
    const kill = await as(who, "POST", `/_electric/entities/${type}/one/signal`, { signal: "SIGKILL" })
    await entities.awaitTxId(kill.body.txid)
    expect(entities.rows().find((r) => r.url === `/${type}/one`).status).toBe("killed")
    entities.stop()

    // a client that starts after the spawn has it in its snapshot: snapshot-end says so
    const later = follow(who, { table: "entities", columns: UI_ENTITY_COLUMNS })
    await later.ready()
    await later.awaitTxId(spawn.body.txid)
    later.stop()
  })

  it("scopes runners, diagnostics, users and effective permissions to the caller", async () => {
    const n = Date.now()
    const alice = `user:alice-${n}`, bob = `user:bob-${n}`
    expect((await as(alice, "POST", "/_electric/runners", { id: `laptop-${n}`, label: "Laptop" })).status).toBe(201)
    expect((await as(bob, "POST", "/_electric/runners", { id: `desk-${n}`, label: "Desk" })).status).toBe(201)
    const type = `shared-${n}`
    expect((await as(alice, "POST", "/_electric/entity-types", { name: type, description: "d" })).status).toBe(201)
    expect((await as(alice, "PUT", `/_electric/entities/${type}/doc`, {})).status).toBe(201)
    expect((await as(alice, "POST", `/_electric/entities/${type}/doc/grants`,
      { subject_kind: "principal", subject_value: bob, permission: "read" })).status).toBe(201)

    const runners = follow(alice, { table: "runners" })
    await runners.ready()
    expect(runners.rows().map((r) => r.id)).toEqual([`laptop-${n}`])
    expect(runners.rows()[0].sandbox_profiles).toEqual([])
    runners.stop()

    const diag = follow(alice, { table: "runner_runtime_diagnostics", where: "runner_id = $1", params: { 1: `laptop-${n}` } })
    await diag.ready()
    expect(diag.rows()).toEqual([])
    expect((await as(alice, "POST", `/_electric/runners/laptop-${n}/heartbeat`, { diagnostics: { events_received: 1 } })).status).toBe(200)
    await waitFor(() => diag.rows().length === 1, "the runner's diagnostics")
    expect(diag.rows()[0].diagnostics).toEqual({ events_received: 1 })
    diag.stop()

    const users = follow(bob, { table: "users" })
    await users.ready()
    expect(users.rows().map((u) => u.id)).toEqual([`bob-${n}`])
    users.stop()

    for (const [who, count] of [[bob, 1], [alice, 0]]) {
      const perms = follow(who, { table: "entity_effective_permissions" })
      await perms.ready()
      const mine = perms.rows().filter((p) => p.entity_url === `/${type}/doc`)
      expect(mine.length).toBe(count)
      if (count) {
        expect(typeof mine[0].id).toBe("number") // the UI coerces ids to numbers
        expect(mine[0]).toMatchObject({ permission: "read", subject_kind: "principal", subject_value: bob })
      }
      perms.stop()
    }
  })
})
