// The official Electric client against entityd's native shapes: ShapeStream and Shape
// from @electric-sql/client materialise the entity and type lists, then follow spawns,
// kills and tag changes live, and a where-filtered shape keeps to its rows.
import { describe, expect, it } from "vitest"
import { base, call, waitFor } from "./lib.mjs"
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
