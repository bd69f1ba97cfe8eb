// The console's composer grammar (web/src/composer/grammar.ts) against the cases the
// composer_input specification pins (§2.1, §2.2), the same cases as the server's
// inbox.SerializeComposerInput tests: spans in UTF-16 code units, JavaScript's \s.
import { describe, expect, it } from "vitest"
import { commandTokens, detectTrigger, mergeNodes, serializeComposerInput, validCommandName } from "../web/src/composer/grammar.ts"
import { call } from "./lib.mjs"

const known = (names) => (n) => names.includes(n)

describe("composer grammar", () => {
  it("serializes the specification's examples", () => {
    expect(serializeComposerInput("please /quickstart\nthen /pr-review now", known(["quickstart", "pr-review"]))).toEqual({
      source: "please /quickstart\nthen /pr-review now",
      nodes: [
        { kind: "slash_command", start: 7, end: 18, raw: "/quickstart", name: "quickstart" },
        { kind: "slash_command", start: 24, end: 34, raw: "/pr-review", name: "pr-review" },
      ],
    })
    expect(serializeComposerInput("/QuickStart /bad_command /also--bad", known([]))).toEqual({ source: "/QuickStart /bad_command /also--bad" })
    expect(serializeComposerInput("/new-command with details", known([]))).toEqual({
      source: "/new-command with details",
      nodes: [{ kind: "slash_command", start: 0, end: 12, raw: "/new-command", name: "new-command", unknown: true }],
    })
  })

  it("counts UTF-16 code units and JavaScript's whitespace", () => {
    // 😀 is two units; NBSP, U+3000 and U+2028 separate tokens as \\s does in JavaScript
    const s = "😀 /a\u00a0/b\u3000/c\u2028/d e\u0301/x path/to /cmd. /e"
    expect(commandTokens(s)).toEqual([
      { start: 3, end: 5, name: "a" }, { start: 6, end: 8, name: "b" }, { start: 9, end: 11, name: "c" },
      { start: 12, end: 14, name: "d" }, { start: 34, end: 36, name: "e" },
    ])
  })

  it("validates names as the server does", () => {
    for (const ok of ["a", "pr-review", "a1-b2-c3"]) expect(validCommandName(ok)).toBe(true)
    for (const bad of ["", "A", "-a", "a-", "a--b", "a_b", "1a", "é"]) expect(validCommandName(bad)).toBe(false)
  })

  it("opens the picker only at a token's start", () => {
    expect(detectTrigger("/")).toEqual({ from: 0, to: 1, query: "" })
    expect(detectTrigger("😀 /pr")).toEqual({ from: 3, to: 6, query: "pr" })
    expect(detectTrigger("x /Pr_1-")).toEqual({ from: 2, to: 8, query: "Pr_1-" })
    expect(detectTrigger("path/to")).toBeNull()
    expect(detectTrigger("/pr ")).toBeNull()
  })

  it("merges chip nodes with typed ones, the chip's kept", () => {
    const chip = { kind: "slash_command", start: 0, end: 3, raw: "/ab", name: "ab" }
    const typed = [{ ...chip, unknown: true }, { kind: "slash_command", start: 4, end: 6, raw: "/c", name: "c" }]
    expect(mergeNodes([chip], typed)).toEqual([chip, typed[1]])
  })
})

// Every payload the console's serializer makes is one the server accepts, and the server
// stores it as sent: random sources mixing emoji (two UTF-16 units), CJK, combining
// marks, JavaScript's Unicode whitespace, newlines and command-like tokens.
describe("the console's payloads against the server's validator", () => {
  const pieces = ["/search", "/pr-review", "/a1-b2", "/Nope", "/bad_name", "path/to", "/x.", "😀", "👍🏽", "日本語", "e\u0301",
    "\u00a0", "\u3000", "\u2028", " ", " ", "\n", "\t", "word", "@main", "/", "//", "-", "é"]
  let seed = 20261125
  const rand = (n) => {
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed % n
  }
  const source = () => Array.from({ length: 1 + rand(12) }, () => pieces[rand(pieces.length)]).join("")

  it("accepts 300 random composer inputs and stores them byte for byte", async () => {
    const type = `grammar-${Date.now().toString(36)}`
    expect((await call("POST", "/_electric/entity-types", { name: type, description: "grammar property test",
      slash_commands: [{ name: "search", description: "s" }] })).status).toBe(201)
    expect((await call("PUT", `/_electric/entities/${type}/g1`, {})).status).toBe(201)
    const sent = []
    for (let i = 0; i < 300; i++) {
      const payload = serializeComposerInput(source(), (n) => n === "search")
      const r = await call("POST", `/_electric/entities/${type}/g1/send`, { type: "composer_input", key: `g-${i}`, payload })
      expect(r.status, JSON.stringify({ payload, body: r.body })).toBe(200)
      sent.push(payload)
    }
    const events = (await call("GET", `/${type}/g1/main?offset=-1`)).body.filter((e) => e.type === "inbox")
    expect(events.map((e) => e.value.payload)).toEqual(sent)
    expect(sent.filter((p) => p.nodes).length).toBeGreaterThan(50) // the property saw commands
  }, 60000)
})
