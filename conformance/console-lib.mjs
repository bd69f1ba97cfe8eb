// What the console's browser suites share: calls to the entityd under test, and axe-core
// run in a page.
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { expect } from "vitest"

const require = createRequire(import.meta.url)
const axeSource = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8")

// consoleClient calls the entityd at base() (read per call: a suite learns its server's
// URL in beforeAll): call answers the status, the body parsed as JSON (null when empty)
// and the headers; events reads an entity's main stream from the start.
export function consoleClient(base) {
  async function call(method, path, body, headers = {}) {
    const res = await fetch(`${base()}${path}`, {
      method,
      headers: { "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers }
  }
  async function events(path) {
    const r = await call("GET", `${path}/main?offset=-1`)
    expect(r.status).toBe(200)
    return r.body
  }
  return { call, events }
}

// axe runs axe-core on the page and returns its serious and critical violations. It is
// evaluated through the DevTools protocol: the page's CSP rightly refuses inline scripts.
export async function axe(page) {
  await page.evaluate(`${axeSource};0`)
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }))
  return result.violations.filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join("; ")})`)
}
