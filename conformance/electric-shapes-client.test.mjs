// The official Electric client against entityd's native shapes: ShapeStream and Shape
// from @electric-sql/client materialise the entity and type lists, then follow spawns,
// kills and tag changes live, and a where-filtered shape keeps to its rows.
import { describe, expect, it } from "vitest"
import { Shape, ShapeStream } from "@electric-sql/client"

const base = process.env.ENTITYD_URL
if (!base) throw new Error("ENTITYD_URL is not set; run through `make test-conformance`")
const shapeUrl = `${base}/_electric/electric/v1/shape`

async function call(method, path, body) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null }
}

async function waitFor(check, what, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = check()
    if (v) return v
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

describe("Electric shapes with @electric-sql/client", () => {
  it("materialises the entity list and follows it live", async () => {
    const type = `shape-${Date.now()}`
    expect((await call("POST", "/_electric/entity-types", { name: type, description: "shapes" })).status).toBe(201)
    expect((await call("PUT", `/_electric/entities/${type}/one`, { tags: { team: "a" } })).status).toBe(201)

    const stream = new ShapeStream({ url: shapeUrl, params: { table: "entities", where: `type = $1`, params: [type] } })
    const shape = new Shape(stream)
    const first = await shape.rows
    expect(first.map((r) => r.url)).toEqual([`/${type}/one`])
    expect(first[0].status).toBe("idle")
    expect(first[0].tags).toEqual({ team: "a" }) // jsonb parsed by the announced schema
    expect(typeof first[0].created_at).toBe("bigint")

    expect((await call("PUT", `/_electric/entities/${type}/two`, {})).status).toBe(201)
    await waitFor(() => shape.currentRows.length === 2, "the spawn to appear")
    expect((await call("POST", `/_electric/entities/${type}/one/tags/team`, { value: "b" })).status).toBe(200)
    await waitFor(() => shape.currentRows.find((r) => r.url === `/${type}/one`)?.tags?.team === "b", "the tag change")
    expect((await call("POST", `/_electric/entities/${type}/two/signal`, { signal: "SIGKILL" })).status).toBe(200)
    await waitFor(() => shape.currentRows.find((r) => r.url === `/${type}/two`)?.status === "killed", "the kill")
    stream.unsubscribeAll()
  })

  it("materialises the type list", async () => {
    const name = `listed-${Date.now()}`
    expect((await call("POST", "/_electric/entity-types", { name, description: "listed" })).status).toBe(201)
    const stream = new ShapeStream({ url: shapeUrl, params: { table: "entity_types" }, subscribe: false })
    const rows = await new Shape(stream).rows
    const row = rows.find((r) => r.name === name)
    expect(row.description).toBe("listed")
    expect(row.revision).toBe(1)
  })
})
