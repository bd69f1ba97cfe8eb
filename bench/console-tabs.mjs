// Many console tabs in one browser (issue 28), measured in Debian's Chromium against the
// entityd at ENTITYD_URL (bench/console-tabs.sh starts one):
//   - TABS entity tabs opened one after another in one browser context (the others
//     stay open and live): each tab's first render, navigation start → the view ready
//     (the app's "console:entity-ready" mark); a tab that is not ready within 10 s is
//     counted as never loading;
//   - a send (one API POST to an entity all TABS tabs show) → the message visible in
//     every tab (the latest of the tabs, by the wall clock), over SENDS sends;
//   - connections: TCP connections from the browser to the server (ss) and, when the
//     server has the gauge, those serving a request (entityd_http_connections{state=
//     "active"}), with 1, 6 and TABS tabs open and idle.
// Prints JSON on stdout.
import { createRequire } from "node:module"
import { execFileSync } from "node:child_process"

const require = createRequire(new URL("../conformance/package.json", import.meta.url))
const { chromium } = require("playwright-core")

const base = process.env.ENTITYD_URL
if (!base) throw new Error("ENTITYD_URL is not set; run bench/console-tabs.sh")
const TABS = Number(process.env.TABS ?? 10)
const SENDS = Number(process.env.SENDS ?? 10)
const FEED = process.env.FEED ?? "worker"
const port = new URL(base).port

async function call(method, path, body) {
  const res = await fetch(`${base}${path}`, { method, headers: { "content-type": "application/json" }, body: body && JSON.stringify(body) })
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
  return res.status === 204 ? null : res.text()
}

function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}
const stats = (xs) => (xs.length ? { n: xs.length, p50: pct(xs, 50), p95: pct(xs, 95), max: Math.max(...xs) } : { n: 0 })

// tcp is the number of established TCP connections to the server's port (this
// process's own fetches are closed first: they use a fresh connection each time below).
function tcp() {
  const out = execFileSync("ss", ["-Htn", "state", "established", `( dport = :${port} )`], { encoding: "utf8" })
  return out.split("\n").filter((l) => l.trim()).length
}

async function active() {
  const res = await fetch(`${base}/_electric/metrics`, { headers: { connection: "close" } })
  const m = (await res.text()).match(/^entityd_http_connections\{state="active"\} (\d+)/m)
  return m ? Number(m[1]) - 1 : null // less the one serving this request
}

async function settle() {
  // idle: let in-flight registrations and first polls finish
  await new Promise((r) => setTimeout(r, 1500))
  return { tcp: tcp(), active: await active() }
}

const type = `bench-tabs-${Date.now().toString(36)}`
await call("POST", "/_electric/entity-types", { name: type, description: "console tabs benchmark" })
await call("PUT", `/_electric/entities/${type}/e1`, {})

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium", args: ["--no-sandbox", "--disable-gpu", "--disable-quic"] })
const firstRender = []
let neverLoaded = 0
const connections = {}
const sendVisible = []
try {
  const context = await browser.newContext({ viewport: { width: 1024, height: 700 } })
  // FEED=page: each tab its own feed (a browser without SharedWorker); FEED=plain: no
  // feed at all (as against a server without one) — for comparing the transports
  if (FEED !== "worker") await context.addInitScript(() => Object.defineProperty(window, "SharedWorker", { value: undefined }))
  if (FEED === "plain") await context.route("**/_electric/feed", (r) => r.fulfill({ status: 404, body: "" }))
  const tabs = []
  for (let i = 0; i < TABS; i++) {
    const page = await context.newPage()
    try {
      // on a console whose tabs hold every connection the browser allows, even the
      // page itself may never load
      await page.goto(`${base}/_electric/console/entities/${type}/e1`, { timeout: 10000 })
      await page.locator("#view[data-ready=true]").waitFor({ timeout: 10000 })
      firstRender.push(await page.evaluate(() => performance.getEntriesByName("console:entity-ready")[0].startTime))
      tabs.push(page)
    } catch {
      neverLoaded++
    }
    const n = i + 1
    if (n === 1 || n === 6 || n === TABS) connections[n] = await settle()
  }
  for (let s = 0; s < SENDS && tabs.length; s++) {
    const text = `tabs bench ${s} ${Date.now()}`
    // each tab notes (wall clock) when the text shows in its view
    await Promise.all(tabs.map((p) => p.evaluate((text) => {
      window.__seen = new Promise((res) => {
        const check = () => {
          if (document.querySelector("#view")?.textContent?.includes(text)) {
            obs.disconnect()
            res(performance.timeOrigin + performance.now())
          }
        }
        const obs = new MutationObserver(check)
        obs.observe(document.body, { subtree: true, childList: true, characterData: true })
        check()
      })
    }, text)))
    const t0 = performance.timeOrigin + performance.now()
    await call("POST", `/_electric/entities/${type}/e1/send`, { type: "composer_input", payload: { source: text } })
    const seen = await Promise.all(tabs.map((p) => p.evaluate(() => window.__seen)))
    sendVisible.push(Math.max(...seen) - t0)
  }
  await context.close()
} finally {
  await browser.close()
}

console.log(JSON.stringify({ tabs: TABS, feed: FEED, never_loaded: neverLoaded, first_render_ms: stats(firstRender), first_render_each_ms: firstRender, send_visible_in_all_ms: stats(sendVisible), connections },
  (k, v) => (typeof v === "number" ? +v.toFixed(1) : v), 2))
