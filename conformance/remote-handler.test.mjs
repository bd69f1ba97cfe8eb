// The TypeScript remote handler in examples/remote-handler, end to end against entityd:
// webhook wakes (signature verified against the JWKS), claims, direct State Protocol
// writes with the write token, done with acks. 1,000 sends to 4 entities are each answered
// once, in order.
import { describe, expect, it } from "vitest"
import { base, call, waitFor } from "./lib.mjs"
import { startHandler } from "../examples/remote-handler/handler.ts"

describe("a remote handler in TypeScript", () => {
  it("answers every message once, in order, through wakes, claims and direct writes", async () => {
    const type = `remote-${Date.now()}`
    const handler = await startHandler({ entityd: base, reply: (p) => `got ${p}` })
    try {
      expect((await call("POST", "/_electric/entity-types", { name: type, description: "handled remotely" })).status).toBe(201)
      const sub = await call("PUT", `/__ds/subscriptions/${type}`, { type: "webhook", pattern: `${type}/**`, webhook: { url: handler.url } })
      expect(sub.status).toBe(201)
      expect(sub.body.webhook.signing.alg).toBe("ed25519")
      const ids = ["a", "b", "c", "d"]
      for (const id of ids) expect((await call("PUT", `/_electric/entities/${type}/${id}`, {})).status).toBe(201)
      for (let i = 0; i < 1000; i++) {
        const id = ids[i % ids.length]
        const r = await call("POST", `/_electric/entities/${type}/${id}/send`, { payload: i, key: `m${i}` })
        expect(r.status).toBe(200)
      }
      for (const [n, id] of ids.entries()) {
        const want = Array.from({ length: 250 }, (_, k) => `got ${n + k * ids.length}`)
        const texts = await waitFor(async () => {
          const r = await fetch(`${base}/${type}/${id}/main?offset=-1`)
          const events = await r.json()
          const t = events.filter((e) => e.type === "text_delta").map((e) => e.value.delta)
          return t.length >= want.length ? t : null
        }, `the replies on ${id}`, 30000)
        expect(texts).toEqual(want) // each once, in send order
      }
    } finally {
      await call("DELETE", `/__ds/subscriptions/${type}`)
      await handler.close()
    }
  })
})
