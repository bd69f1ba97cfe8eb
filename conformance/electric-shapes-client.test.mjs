// The official Electric client against entityd's native shapes: ShapeStream and Shape
// from @electric-sql/client materialise the entity and type lists, then follow spawns,
// kills and tag changes live, and a where-filtered shape keeps to its rows; a snapshot
// larger than a page (a server with --shape-snapshot-rows 4) arrives in pages.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { base, call, startEntityd, waitFor } from "./lib.mjs"
import { Shape, ShapeStream } from "@electric-sql/client"

const shapeUrl = `${base}/_electric/electric/v1/shape`

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

describe("a snapshot in pages, with @electric-sql/client", () => {
  let paged

  beforeAll(async () => {
    paged = await startEntityd(["--no-demo", "--shape-snapshot-rows", "4"])
  }, 30000)

  afterAll(async () => {
    await paged?.stop()
  })

  it("materialises a shape of many pages and then follows it live", async () => {
    const type = `paged-${Date.now()}`
    const put = (path, body) => fetch(`${paged.url}${path}`, { method: path.includes("/signal") || path.includes("/tags/") ? "POST" : "PUT",
      headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
    expect((await fetch(`${paged.url}/_electric/entity-types`, { method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: type, description: "paged" }) })).status).toBe(201)
    const want = []
    for (let i = 0; i < 23; i++) {
      expect((await put(`/_electric/entities/${type}/e${String(i).padStart(2, "0")}`, {})).status).toBe(201)
      want.push(`/${type}/e${String(i).padStart(2, "0")}`)
    }
    // the responses the client asks for, to see that there were pages
    const offsets = []
    const fetchClient = (input, init) => {
      offsets.push(new URL(String(input)).searchParams.get("offset"))
      return fetch(input, init)
    }
    const stream = new ShapeStream({ url: `${paged.url}/_electric/electric/v1/shape`, params: { table: "entities", where: `type = $1`, params: [type] }, fetchClient })
    const shape = new Shape(stream)
    const rows = await shape.rows
    expect(rows.map((r) => r.url).sort()).toEqual(want)
    expect(offsets.filter((o) => o?.startsWith("s")).length).toBeGreaterThanOrEqual(5) // 23 rows, 4 a page

    expect((await put(`/_electric/entities/${type}/e05/signal`, { signal: "SIGKILL" })).status).toBe(200)
    await waitFor(() => shape.currentRows.find((r) => r.url === `/${type}/e05`)?.status === "killed", "the kill after the pages")
    expect(shape.currentRows.length).toBe(23)
    stream.unsubscribeAll()
  })
})
