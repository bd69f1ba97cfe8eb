// Many console tabs in one browser (issue 28): every view's live reads (the entity's
// stream, its slash commands, the entity list's shape) travel over one live feed
// (GET /_electric/feed) held by a SharedWorker for all tabs, so six or ten entity tabs
// load and stay live where three used to freeze (Chromium allows six connections per
// host over HTTP/1.1). The server's gauge of active HTTP connections
// (entityd_http_connections{state="active"}) counts what the browser holds.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launchChromium, startEntityd } from "./lib.mjs"

let server, url, browser
const run = Date.now().toString(36)

async function call(method, path, body) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, body: text }
}

// activeConnections is the server's count of connections serving a request now, less
// the one this request itself is served on.
async function activeConnections() {
  const r = await call("GET", "/_electric/metrics")
  expect(r.status).toBe(200)
  const m = r.body.match(/^entityd_http_connections\{state="active"\} (\d+)/m)
  expect(m).not.toBeNull()
  return Number(m[1]) - 1
}

// BOUND is the most active connections the console may hold whatever the tab count:
// the feed's one, plus one for a read being registered or an API call in flight.
const BOUND = 2

async function spawn(id) {
  const r = await call("PUT", `/_electric/entities/assistant/${id}`, {})
  expect(r.status).toBe(201)
}

async function send(id, text) {
  const r = await call("POST", `/_electric/entities/assistant/${id}/send`, { type: "composer_input", payload: { source: text } })
  expect(r.status).toBe(200)
}

async function openTab(context, id) {
  const page = await context.newPage()
  page.errors = []
  page.on("pageerror", (e) => page.errors.push(e.message))
  await page.goto(`${url}/_electric/console/entities/assistant/${id}`)
  await page.locator("#view[data-ready=true]").waitFor({ timeout: 10000 })
  return page
}

// shows waits until the page's view shows text.
async function shows(page, text, timeout = 10000) {
  await page.locator("#view").getByText(text).first().waitFor({ timeout })
}

beforeAll(async () => {
  server = await startEntityd([])
  url = server.url
  browser = await launchChromium()
}, 30000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
})

describe("console tabs", () => {
  it("six, then ten entity tabs in one browser all load and stay live over a bounded number of connections", async () => {
    const context = await browser.newContext({ viewport: { width: 1024, height: 700 } })
    const ids = Array.from({ length: 10 }, (_, i) => `tab${i}-${run}`)
    for (const id of ids) await spawn(id)
    const tabs = []
    for (const id of ids.slice(0, 6)) tabs.push(await openTab(context, id))
    // sent after every tab is ready: it must arrive live, in each tab
    for (const [i, id] of ids.slice(0, 6).entries()) await send(id, `hello six ${i} ${run}`)
    await Promise.all(tabs.map((p, i) => shows(p, `hello six ${i} ${run}`)))
    await expect.poll(activeConnections, { timeout: 10000 }).toBeLessThanOrEqual(BOUND)
    const six = await activeConnections()

    for (const id of ids.slice(6)) tabs.push(await openTab(context, id))
    for (const [i, id] of ids.entries()) await send(id, `hello ten ${i} ${run}`)
    await Promise.all(tabs.map((p, i) => shows(p, `hello ten ${i} ${run}`)))
    await expect.poll(activeConnections, { timeout: 10000 }).toBeLessThanOrEqual(BOUND)
    const ten = await activeConnections()
    console.log(`active HTTP connections with the tabs idle: 6 tabs ${six}, 10 tabs ${ten}`)
    for (const p of tabs) expect(p.errors).toEqual([])
    await context.close()
  }, 120000)

  it("closing tabs, the first one included, leaves the others live", async () => {
    const context = await browser.newContext({ viewport: { width: 1024, height: 700 } })
    const ids = Array.from({ length: 4 }, (_, i) => `close${i}-${run}`)
    for (const id of ids) await spawn(id)
    const tabs = []
    for (const id of ids) tabs.push(await openTab(context, id))
    await tabs[0].close() // the tab that started the shared worker
    await tabs[2].close()
    for (const i of [1, 3]) await send(ids[i], `after closing ${i} ${run}`)
    await shows(tabs[1], `after closing 1 ${run}`)
    await shows(tabs[3], `after closing 3 ${run}`)
    // a tab opened now joins the same feed and is live too
    const again = await openTab(context, ids[0])
    await send(ids[0], `reopened ${run}`)
    await shows(again, `reopened ${run}`)
    await expect.poll(activeConnections, { timeout: 10000 }).toBeLessThanOrEqual(BOUND)
    for (const p of [tabs[1], tabs[3], again]) expect(p.errors).toEqual([])
    await context.close()
  }, 60000)

  it("without SharedWorker (Chrome on Android) each tab holds its own feed and stays live", async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } })
    await context.addInitScript(() => { delete window.SharedWorker })
    const ids = [`page0-${run}`, `page1-${run}`, `page2-${run}`]
    for (const id of ids) await spawn(id)
    const tabs = []
    for (const id of ids) tabs.push(await openTab(context, id))
    for (const [i, id] of ids.entries()) await send(id, `in page ${i} ${run}`)
    await Promise.all(tabs.map((p, i) => shows(p, `in page ${i} ${run}`)))
    // one feed per tab (three where the three views used to need nine)
    await expect.poll(activeConnections, { timeout: 10000 }).toBeLessThanOrEqual(ids.length + 1)
    for (const p of tabs) expect(p.errors).toEqual([])
    await context.close()
  }, 60000)

  it("the entity list is live through the feed", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    const page = await context.newPage()
    const direct = []
    page.on("request", (r) => {
      if (r.url().includes("/v1/shape")) direct.push(r.url())
    })
    const first = `listed-a-${run}`
    await spawn(first)
    const start = Date.now()
    await page.goto(`${url}/_electric/console/entities`)
    await page.locator("#view").getByText(first).first().waitFor({ timeout: 10000 }) // the snapshot
    const id = `listed-b-${run}`
    const t0 = Date.now()
    await spawn(id) // a change: arrives live
    await page.locator("#view").getByText(id).first().waitFor({ timeout: 10000 })
    console.log(`list: snapshot ${t0 - start} ms, change ${Date.now() - t0} ms`)
    // the page read the snapshot itself (a catch-up read answers at once), but never
    // waited on the shape: its live reads went through the feed
    expect(direct.length).toBeGreaterThan(0)
    expect(direct.filter((u) => new URL(u).searchParams.has("live"))).toEqual([])
    await context.close()
  }, 30000)
})
