// The console's performance targets (issue 13), measured in Debian's Chromium against the
// entityd at ENTITYD_URL (bench/console.sh starts one):
//   - first render of an entity view whose main stream holds EVENTS events and which has
//     COMMANDS slash commands: navigation start → the timeline and the commands rendered
//     (the app's "console:entity-ready" mark), over REPS fresh page loads; and the same
//     view opened from the entity list's link (a client-side navigation);
//   - each keystroke's suggestion update with COMMANDS commands: the input event → the
//     listbox updated and laid out (the app's "console:suggest" measures);
//   - the bundle's gzipped size.
// Prints JSON (raw numbers and percentiles) on stdout.
import { createRequire } from "node:module"
import { readFileSync, readdirSync } from "node:fs"
import { gzipSync } from "node:zlib"

const require = createRequire(new URL("../conformance/package.json", import.meta.url))
const { chromium } = require("playwright-core")

const base = process.env.ENTITYD_URL
if (!base) throw new Error("ENTITYD_URL is not set; run bench/console.sh")
const EVENTS = Number(process.env.EVENTS ?? 1000)
const COMMANDS = Number(process.env.COMMANDS ?? 500)
const REPS = Number(process.env.REPS ?? 10)
const KEYS = Number(process.env.KEYS ?? 200)

async function call(method, path, body) {
  const res = await fetch(`${base}${path}`, { method, headers: { "content-type": "application/json" }, body: body && JSON.stringify(body) })
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
  return res.status === 204 ? null : res.json()
}

async function inParallel(n, limit, f) {
  let next = 0
  await Promise.all(Array.from({ length: limit }, async () => {
    while (next < n) await f(next++)
  }))
}

function pct(xs, p) {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}
const stats = (xs) => ({ n: xs.length, p50: pct(xs, 50), p95: pct(xs, 95), max: Math.max(...xs) })

const type = `bench-console-${Date.now().toString(36)}`
const id = "e1"
await call("POST", "/_electric/entity-types", { name: type, description: "console benchmark" })
await call("PUT", `/_electric/entities/${type}/${id}`, {})
const argsFor = (i) => (i % 3 === 0 ? [{ name: "target", type: "string", required: true }, { name: "count", type: "number" }] : undefined)
await inParallel(COMMANDS, 16, (i) => call("PUT", `/_electric/entities/${type}/${id}/slash-commands/cmd-${String(i).padStart(3, "0")}?owner=bench`,
  { description: `Benchmark command number ${i}`, arguments: argsFor(i) }))
const have = (await call("GET", `/${type}/${id}/main?offset=-1`)).length
await inParallel(Math.max(0, EVENTS - have), 16, (i) => call("POST", `/_electric/entities/${type}/${id}/send`, {
  type: "composer_input", payload: { source: `message ${i} /cmd-001 with 😀`, nodes: [{ kind: "slash_command", start: 10 + String(i).length - 1, end: 18 + String(i).length - 1, raw: "/cmd-001", name: "cmd-001" }] },
}))
const events = (await call("GET", `/${type}/${id}/main?offset=-1`)).length

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium", args: ["--no-sandbox", "--disable-gpu"] })
const firstRender = []
const inApp = []
const appToReady = []
const keystrokes = []
try {
  for (let r = 0; r < REPS; r++) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } })
    const page = await context.newPage()
    await page.goto(`${base}/_electric/console/entities/${type}/${id}`)
    await page.locator("#view[data-ready=true]").waitFor({ timeout: 30000 })
    const m = await page.evaluate(() => {
      const ready = performance.getEntriesByName("console:entity-ready")[0].startTime
      const script = performance.getEntriesByType("resource").find((e) => e.name.endsWith("/app.js"))
      const mark = (n) => performance.getEntriesByName(n)[0]?.startTime
      const spans = (n) => performance.getEntriesByName(n).map((e) => `${e.startTime.toFixed(0)}+${e.duration.toFixed(0)}`).join(" ")
      return { ready, timeline: mark("console:timeline-ready"), commandsReady: mark("console:commands-ready"),
        batches: spans("console:timeline-batch"), commandUpdates: spans("console:commands-update"), scriptEnd: script ? script.responseEnd : 0, rendered: document.querySelectorAll(".timeline:not(.outbox) > li").length,
        held: Number(document.querySelector(".timeline-box")?.dataset.events), items: Number(document.querySelector(".timeline-box")?.dataset.items),
        earlier: document.querySelector(".timeline-box .earlier")?.textContent ?? "",
        commands: document.querySelectorAll(".command-list > li").length }
    })
    // every event is held; the newest items (a message, a reply, a folded run of system
    // events) are rendered, the earlier ones behind a button
    const earlier = Number(/\((\d+) more\)/.exec(m.earlier)?.[1] ?? 0)
    if (m.held !== events || m.rendered + earlier !== m.items || m.commands !== COMMANDS) throw new Error(`held ${m.held}/${events} events, rendered ${m.rendered}+${earlier}/${m.items} items, ${m.commands}/${COMMANDS} commands`)
    firstRender.push(m.ready)
    if (process.env.VERBOSE) console.error(JSON.stringify(m))
    appToReady.push(m.ready - m.scriptEnd)
    if (r === 0) {
      const box = page.getByRole("combobox", { name: "Message" })
      await box.click()
      const seq = ["/", "c", "m", "d", "-", "4", "Backspace", "3", "Backspace", "Backspace", "Backspace", "Backspace", "Backspace", "Backspace"]
      for (let k = 0; k < KEYS; k++) await page.keyboard.press(seq[k % seq.length])
      keystrokes.push(...await page.evaluate(() => performance.getEntriesByName("console:suggest").map((e) => e.duration)))
    }
    // the same view opened from inside the console (the list's link): a client-side
    // navigation, as a person moving between entities does
    await page.goto(`${base}/_electric/console/entities?type=${type}`)
    await page.locator(`tr[data-url="/${type}/${id}"] a`).waitFor({ timeout: 30000 })
    await page.evaluate(() => performance.clearMarks("console:entity-ready"))
    const t0 = await page.evaluate(() => performance.now())
    await page.locator(`tr[data-url="/${type}/${id}"] a`).click()
    await page.locator("#view[data-ready=true]").waitFor({ timeout: 30000 })
    inApp.push(await page.evaluate((t0) => performance.getEntriesByName("console:entity-ready")[0].startTime - t0, t0))
    await context.close()
  }
} finally {
  await browser.close()
}

const dist = new URL("../console/dist/", import.meta.url)
let gz = 0
for (const f of readdirSync(dist)) gz += gzipSync(readFileSync(new URL(f, dist)), { level: 9 }).length

console.log(JSON.stringify({
  events, commands: COMMANDS, reps: REPS,
  first_render_ms: stats(firstRender), script_loaded_to_ready_ms: stats(appToReady), in_app_navigation_ms: stats(inApp), keystroke_update_ms: stats(keystrokes),
  bundle_gzip_kb: +(gz / 1024).toFixed(1),
}, (k, v) => (typeof v === "number" ? +v.toFixed(2) : v), 2))
