// The console (served by entityd at /_electric/console/) in Debian's Chromium, driven by
// playwright-core, against an entityd that runs the demo assistant: registering a type,
// spawning from the generated form, composing with the live slash-command picker by
// keyboard after an emoji, CJK and a combining mark, the exact composer_input on the
// stream, the assistant's reply in the timeline, commands registered and removed while
// the page is open, a 422 shown at its span, a kill, jwt mode's token, and axe-core.
//
// CONSOLE_SCREENSHOTS=<dir> saves a screenshot of each view there (docs/console is
// where docs/CONSOLE.md's come from: `make console-screenshots`).
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { mkdirSync } from "node:fs"
import { join } from "node:path"
import { jwtKeys, launchChromium, startEntityd, waitFor } from "./lib.mjs"
import { axe, consoleClient } from "./console-lib.mjs"

const shots = process.env.CONSOLE_SCREENSHOTS

let server, url, browser
const { call, events } = consoleClient(() => url)
const run = Date.now().toString(36)

// newPage opens a page that fails the test on any script error or failed request.
async function newPage(options = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, ...options })
  const page = await context.newPage()
  page.errors = []
  page.on("pageerror", (e) => page.errors.push(e.message))
  page.dialogs = []
  page.on("dialog", (d) => {
    page.dialogs.push(d.type()) // none is expected: the console asks in the page
    void d.dismiss()
  })
  return page
}

async function openEntity(page, type, id) {
  await page.goto(`${url}/_electric/console/entities/${type}/${id}`)
  await page.locator("#view[data-ready=true]").waitFor({ timeout: 10000 })
}

const listbox = (page) => page.getByRole("listbox", { name: "Slash commands" })
const options = (page) => listbox(page).getByRole("option")

async function optionNames(page) {
  if (!(await listbox(page).isVisible())) return []
  return (await options(page).locator(".opt-name").allTextContents())
}

// openPicker types "/" in an empty composer so that the picker lists every command.
async function openPicker(page) {
  const box = page.getByRole("combobox", { name: "Message" })
  await box.click()
  await page.keyboard.press("Control+A")
  await page.keyboard.press("Backspace")
  await page.keyboard.type("/")
  await expect.poll(() => listbox(page).isVisible()).toBe(true)
}

async function screenshot(page, name) {
  if (!shots) return
  mkdirSync(shots, { recursive: true })
  await page.screenshot({ path: join(shots, `${name}.png`) })
}

beforeAll(async () => {
  server = await startEntityd([]) // with the demo assistant
  url = server.url
  browser = await launchChromium()
}, 30000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
})

describe("the console", () => {
  const type = `notebook-${run}`
  const id = "n1"

  it("a browser opening the server's address lands on the console", async () => {
    const page = await newPage()
    await page.goto(`${url}/`)
    expect(new URL(page.url()).pathname).toBe("/_electric/console/")
    await expect.poll(() => page.getByRole("heading", { level: 1 }).textContent()).toMatch(/^Entities/)
    // a stream client asking for / still gets JSON
    const res = await fetch(`${url}/`)
    expect(res.status).toBe(404)
    expect(res.headers.get("content-type")).toMatch(/json/)
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("registers a type from JSON, with the server's details inline", async () => {
    const page = await newPage()
    await page.goto(`${url}/_electric/console/types`)
    const editor = page.getByLabel("Type definition (JSON)")
    await editor.fill(JSON.stringify({ name: type, description: "Keeps notes", slash_commands: [{ name: "Bad_Name" }] }))
    await page.getByRole("button", { name: "Register" }).click()
    const errors = page.locator(".register .errors")
    await expect.poll(() => errors.textContent()).toMatch(/422/)
    expect(await errors.locator(".error-path").allTextContents()).toContain("/slash_commands/0/name")

    await editor.fill(JSON.stringify({
      name: type,
      description: "Keeps notes",
      creation_schema: { type: "object", properties: { owner: { type: "string" }, pages: { type: "integer" } }, required: ["owner"] },
      slash_commands: [{ name: "summarize", description: "Summarize the notes" },
        { name: "search", description: "Find notes", arguments: [{ name: "query", type: "string", required: true }] }],
    }))
    await page.getByRole("button", { name: "Register" }).click()
    await expect.poll(() => page.getByRole("status").textContent()).toBe(`Registered ${type}, revision 1.`)
    // the list is a live shape: the new type appears without a reload
    const card = page.locator(`.type-card[data-type="${type}"]`)
    await card.waitFor()
    await card.locator("summary").click()
    expect(await card.locator(".static-commands li").allTextContents()).toEqual(["/summarize — Summarize the notes", "/search <query> — Find notes"])
    expect(await axe(page)).toEqual([])
    await screenshot(page, "types")

    // Edit loads the definition; registering it again is an update (revision 2)
    await card.getByRole("button", { name: "Edit" }).click()
    const def = JSON.parse(await editor.inputValue())
    expect(def.name).toBe(type)
    def.description = "Keeps notes, updated"
    await editor.fill(JSON.stringify(def))
    await page.getByRole("button", { name: "Register" }).click()
    // the page says what registering an existing name does before doing it
    await expect.poll(() => page.locator(".register-confirm").textContent()).toMatch(`${type} exists at revision 1; registering makes revision 2.`)
    await page.getByRole("button", { name: "Update" }).click()
    await expect.poll(() => page.getByRole("status").textContent()).toBe(`Registered ${type}, revision 2.`)
    await expect.poll(() => card.locator("summary").textContent()).toMatch(/rev 2 — Keeps notes, updated$/)
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("spawns from the form generated from the creation schema", async () => {
    const page = await newPage()
    await page.goto(`${url}/_electric/console/entities?spawn=${type}`)
    const spawnForm = page.getByRole("form", { name: "Spawn an entity" })
    await expect.poll(() => spawnForm.getByLabel("Type").inputValue()).toBe(type)
    await page.getByLabel("Id").fill(id)
    await page.getByLabel("owner (required)").fill("ada")
    await page.getByLabel("pages").fill("3")
    await page.getByLabel("Tags").fill("team=core")
    await page.getByRole("button", { name: "Spawn" }).click()
    await page.waitForURL(`**/_electric/console/entities/${type}/${id}`)
    await expect.poll(() => page.locator("#entity-status").textContent()).toBe("idle")
    const e = await call("GET", `/_electric/entities/${type}/${id}`)
    expect(e.body).toMatchObject({ status: "idle", tags: { team: "core" } })
    const created = (await events(`/${type}/${id}`)).find((ev) => ev.type === "entity_created")
    expect(created.value.args).toEqual({ owner: "ada", pages: 3 })
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("composes after an emoji, CJK and a combining mark, picks a command by keyboard, and shows the reply", async () => {
    const aid = `a-${run}`
    const page = await newPage()
    // spawned from the console too: the demo type has no creation schema, so no fields
    await page.goto(`${url}/_electric/console/entities?spawn=assistant`)
    const spawnForm = page.getByRole("form", { name: "Spawn an entity" })
    await expect.poll(() => spawnForm.getByLabel("Type").inputValue()).toBe("assistant")
    await page.getByLabel("Id").fill(aid)
    await page.getByRole("button", { name: "Spawn" }).click()
    await page.waitForURL(`**/_electric/console/entities/assistant/${aid}`)
    await page.locator("#view[data-ready=true]").waitFor({ timeout: 10000 })
    const box = page.getByRole("combobox", { name: "Message" })
    await box.click()
    const prefix = "😀 日本 e\u0301 "
    await page.keyboard.type(prefix)
    await page.keyboard.type("/")
    await expect.poll(() => optionNames(page)).toEqual(["/pr-review", "/quickstart", "/search"])
    expect(await box.getAttribute("aria-expanded")).toBe("true")
    await page.keyboard.press("ArrowDown")
    await page.keyboard.press("ArrowDown")
    const active = await box.getAttribute("aria-activedescendant")
    expect(await page.locator(`#${active} .opt-name`).textContent()).toBe("/search")
    await screenshot(page, "composer")
    await page.keyboard.press("Enter")
    expect(await box.getAttribute("aria-expanded")).toBe("false")
    expect(await box.locator(".chip").textContent()).toBe("/search")
    await page.keyboard.type("release notes")
    await page.keyboard.press("Control+Enter")

    const source = `${prefix}/search release notes`
    const start = source.indexOf("/search") // UTF-16 code units, as the server counts
    expect(start).toBe(9) // 😀 is two units, 日, 本, e and U+0301 one each
    const sent = await waitFor(async () => (await events(`/assistant/${aid}`)).find((ev) => ev.type === "inbox"), "the message")
    expect(sent.value.message_type).toBe("composer_input")
    expect(sent.value.mode).toBe("immediate")
    expect(sent.value.payload).toEqual({ source, nodes: [{ kind: "slash_command", start, end: start + 7, raw: "/search", name: "search" }] })
    // the message and the reply come from the stream
    const message = page.locator(".ev-inbox .composed")
    await expect.poll(() => message.textContent()).toBe(source)
    expect(await message.locator(".chip").textContent()).toBe("/search")
    await expect.poll(() => page.locator(".ev-reply .reply").last().textContent(), { timeout: 10000 })
      .toMatch(/^Command \/search with input "release notes"/)
    // the reply is written as Electric's runtime writes one (a run, its text, the text's
    // delta, the text and the run completed) and the timeline shows it as one item
    const replyEvents = (await events(`/assistant/${aid}`)).filter((ev) => ["run", "text", "text_delta"].includes(ev.type))
    expect(replyEvents.map((ev) => `${ev.type} ${ev.headers.operation}`))
      .toEqual(["run insert", "text insert", "text_delta insert", "text update", "run update"])
    await expect.poll(() => page.locator(".ev-reply").count()).toBe(1)
    expect(await page.locator(".ev-text, .ev-run, .ev-text_delta").count()).toBe(0)
    expect(await page.locator(".ev-reply").getAttribute("data-key")).toBe(replyEvents[0].key)
    expect(await page.locator(".ev-reply .badge").count()).toBe(0) // completed: no state badge
    expect(await box.textContent()).toBe("")
    await screenshot(page, "entity")
    expect(await axe(page)).toEqual([])
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("follows the live collection: a command registered or removed while the page is open", async () => {
    const page = await newPage()
    await openEntity(page, type, id)
    await openPicker(page)
    expect(await optionNames(page)).toEqual(["/search", "/summarize"])
    expect(await axe(page)).toEqual([]) // with the listbox open

    expect((await call("PUT", `/_electric/entities/${type}/${id}/slash-commands/deploy?owner=ops`,
      { description: "Deploy it", arguments: [{ name: "env", type: "string", required: true }] })).status).toBe(200)
    await expect.poll(() => optionNames(page), { timeout: 1000 }).toEqual(["/deploy", "/search", "/summarize"])
    expect(await options(page).first().locator(".opt-hint").textContent()).toBe(" <env>")
    expect(await options(page).first().locator(".opt-source").textContent()).toBe("dynamic · ops")

    expect((await call("PUT", `/_electric/entities/${type}/${id}/slash-commands/search?owner=ops`,
      { description: "Search (dynamic)" })).status).toBe(200)
    const search = options(page).filter({ hasText: "/search" })
    await expect.poll(() => search.locator(".opt-desc").textContent(), { timeout: 1000 }).toBe("Search (dynamic)")

    expect((await call("DELETE", `/_electric/entities/${type}/${id}/slash-commands/deploy?owner=ops`)).status).toBe(200)
    await expect.poll(() => optionNames(page), { timeout: 1000 }).toEqual(["/search", "/summarize"])
    expect((await call("DELETE", `/_electric/entities/${type}/${id}/slash-commands/search?owner=ops`)).status).toBe(200)
    await expect.poll(() => search.locator(".opt-desc").textContent(), { timeout: 1000 }).toBe("Find notes")
    expect(await search.locator(".opt-source").textContent()).toBe("static")

    // filtering as the user types, Escape closing
    await page.keyboard.type("su")
    await expect.poll(() => optionNames(page)).toEqual(["/summarize"])
    await page.keyboard.press("Escape")
    expect(await listbox(page).isVisible()).toBe(false)
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("keeps chips and typed text apart: no picker after a chip, no overlapping nodes", async () => {
    const page = await newPage()
    await openEntity(page, type, id)
    const box = page.getByRole("combobox", { name: "Message" })
    await box.click()
    await page.keyboard.type("hello /su")
    await expect.poll(() => optionNames(page)).toEqual(["/summarize"])
    await page.keyboard.press("Enter") // the chip, and a space after it
    await page.keyboard.press("Backspace") // the caret right after the chip
    expect(await box.getAttribute("aria-expanded")).toBe("false")
    await page.keyboard.press("Shift+Enter") // a new line, not a second insertion over "hello "
    expect(await box.textContent()).toMatch(/^hello \/summarize\n+$/)
    expect(await box.locator(".chip").count()).toBe(1)
    // the source is what shows: one line break (not the browser's extra trailing one)
    await page.getByText("Payload as JSON").click()
    await page.getByRole("button", { name: "Copy from the composer" }).click()
    expect(JSON.parse(await page.getByLabel("Payload (JSON)").inputValue())).toEqual({ source: "hello /summarize\n",
      nodes: [{ kind: "slash_command", start: 6, end: 16, raw: "/summarize", name: "summarize" }] })
    await box.click()

    await page.keyboard.press("Control+A")
    await page.keyboard.press("Backspace")
    await page.keyboard.type("hello /su")
    await page.keyboard.press("Enter")
    await page.keyboard.press("Backspace")
    await page.keyboard.type("x") // typed against the chip
    expect(await box.textContent()).toBe("hello /summarizex")
    await page.keyboard.press("Control+Enter")
    const sent = await waitFor(async () => (await events(`/${type}/${id}`)).find((ev) => ev.type === "inbox" && ev.value.payload.source === "hello /summarizex"), "the message")
    expect(sent.value.payload.nodes).toEqual([{ kind: "slash_command", start: 6, end: 16, raw: "/summarize", name: "summarize" }])
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("sends once while a send is on its way, and keeps what was typed meanwhile in the box", async () => {
    const page = await newPage()
    await openEntity(page, type, id)
    let release
    const held = new Promise((r) => (release = r))
    let posts = 0
    await page.route("**/send", async (route) => {
      posts++
      await held
      await route.continue()
    })
    const box = page.getByRole("combobox", { name: "Message" })
    await box.click()
    await page.keyboard.type("only once")
    await page.keyboard.press("Control+Enter")
    await page.keyboard.press("Control+Enter") // the message left the box: nothing more to send
    await page.keyboard.type("and more")
    expect(await page.locator(".msg.pending .composed").textContent()).toBe("only once")
    release()
    await waitFor(async () => (await events(`/${type}/${id}`)).some((ev) => ev.type === "inbox" && ev.value.payload.source === "only once"), "the message")
    expect(posts).toBe(1)
    await expect.poll(() => page.locator(".msg.pending").count()).toBe(0)
    expect(await box.textContent()).toBe("and more")
    const stored = (await events(`/${type}/${id}`)).filter((ev) => ev.type === "inbox" && ev.value.payload.source.startsWith("only once"))
    expect(stored.length).toBe(1)
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("sends a command the entity does not know, flagged unknown", async () => {
    const page = await newPage()
    await openEntity(page, type, id)
    const box = page.getByRole("combobox", { name: "Message" })
    await box.click()
    await page.keyboard.type("/nope then /summarize")
    await page.keyboard.press("Escape")
    await page.getByRole("button", { name: "Send", exact: true }).click()
    const sent = await waitFor(async () => (await events(`/${type}/${id}`)).find((ev) => ev.type === "inbox" && ev.value.payload.source.startsWith("/nope")), "the message")
    expect(sent.value.payload.nodes).toEqual([
      { kind: "slash_command", start: 0, end: 5, raw: "/nope", name: "nope", unknown: true },
      { kind: "slash_command", start: 11, end: 21, raw: "/summarize", name: "summarize" },
    ])
    await expect.poll(() => page.locator(".ev-inbox .chip.unknown").textContent()).toBe("/nope")
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("shows a 422 at the span it is about", async () => {
    const page = await newPage()
    await openEntity(page, type, id)
    await page.getByText("Payload as JSON").click()
    await page.getByLabel("Payload (JSON)").fill(JSON.stringify({
      source: "see /summarize", nodes: [{ kind: "slash_command", start: 4, end: 9, raw: "/sum", name: "summarize" }],
    }))
    await page.getByRole("button", { name: "Send JSON" }).click()
    const errors = page.locator("#composer-errors")
    await expect.poll(() => errors.locator(".error-summary").textContent()).toBe("Not sent: The message does not match its schema.")
    expect(await errors.locator(".error-code").textContent()).toMatch(/^422 SCHEMA_VALIDATION_FAILED/)
    expect(await errors.locator(".error-path").allTextContents()).toEqual(["/nodes/0/raw"])
    expect(await errors.locator("mark.error-span").textContent()).toBe("/summ")
    expect(await errors.locator(".error-source").textContent()).toBe("see /summarize")
    expect(await page.getByRole("combobox", { name: "Message" }).getAttribute("aria-invalid")).toBe("true")
    await screenshot(page, "error")
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("signals from the entity view; the list follows status and tags under its filters", async () => {
    const list = await newPage()
    await list.goto(`${url}/_electric/console/entities`)
    const filters = list.getByRole("group", { name: "Filters" })
    await filters.getByLabel("Type").selectOption(type)
    await filters.getByLabel("Status").selectOption("paused")
    await filters.getByLabel("Tag").fill("team=core")
    const row = list.locator(`tr[data-url="/${type}/${id}"]`)
    await expect.poll(() => list.locator("#entity-count").textContent()).toBe("(0)")
    // the filters are in the address, so the view can be linked
    expect(new URL(list.url()).search).toBe(`?type=${type}&status=paused&tag=team%3Dcore`)

    const page = await newPage()
    await openEntity(page, type, id)
    await page.getByRole("button", { name: "Pause" }).click()
    await expect.poll(() => page.locator("#entity-status").textContent()).toBe("paused")
    await expect.poll(() => row.count()).toBe(1) // live: the paused entity enters the filtered list

    expect((await call("POST", `/_electric/entities/${type}/${id}/tags/team`, { value: "ops" })).status).toBe(200)
    await expect.poll(() => page.locator(".entity-head .tag").allTextContents()).toEqual(["team: ops"])
    await expect.poll(() => row.count()).toBe(0) // and leaves it when its tag no longer matches
    await filters.getByLabel("Tag").fill("team=ops")
    await expect.poll(() => row.count()).toBe(1)

    await page.getByRole("button", { name: "Resume" }).click()
    await expect.poll(() => page.locator("#entity-status").textContent()).toBe("idle")
    await expect.poll(() => row.count()).toBe(0)
    const signals = (await events(`/${type}/${id}`)).filter((ev) => ev.type === "signal").map((ev) => ev.value.signal)
    expect(signals).toEqual(["SIGSTOP", "SIGCONT"])
    expect(list.errors).toEqual([])
    expect(page.errors).toEqual([])
    await list.context().close()
    await page.context().close()
  })

  it("says when the server cannot be reached, and catches up when it is back", async () => {
    const rid = `r-${run}`
    expect((await call("PUT", `/_electric/entities/assistant/${rid}`, {})).status).toBe(201)
    const page = await newPage()
    await openEntity(page, "assistant", rid)
    const offline = page.getByRole("status").filter({ hasText: "cannot be reached" })
    expect(await offline.isVisible()).toBe(false)

    await server.stop()
    await expect.poll(() => offline.isVisible(), { timeout: 10000 }).toBe(true)
    server = await startEntityd([], { port: Number(new URL(url).port) })

    expect((await call("POST", `/_electric/entities/assistant/${rid}/send`, { type: "composer_input", payload: { source: "after the restart" } })).status).toBe(200)
    expect((await call("PUT", `/_electric/entities/assistant/${rid}/slash-commands/fresh?owner=ops`, { description: "Registered while away" })).status).toBe(200)
    // the live clients retry with backoff (a few seconds at most) and pick up where they were
    await expect.poll(() => page.locator(".ev-inbox .composed").last().textContent(), { timeout: 15000 }).toBe("after the restart")
    await expect.poll(() => page.locator(".ev-reply .reply").last().textContent(), { timeout: 10000 }).toMatch(/after the restart/)
    await expect.poll(() => page.locator('.command-list li[data-command="fresh"]').count(), { timeout: 10000 }).toBe(1)
    expect(await offline.isVisible()).toBe(false)
    expect(page.errors).toEqual([])
    await page.context().close()
  }, 60000)

  it("shows a kill in the list and disables the composer", async () => {
    const list = await newPage()
    await list.goto(`${url}/_electric/console/entities?type=${type}`)
    const row = list.locator(`tr[data-url="/${type}/${id}"]`)
    await expect.poll(() => row.locator(".badge").textContent()).toBe("idle")
    // ?type= from the Types page's link is the filter, and stays in the address
    expect(await list.getByRole("group", { name: "Filters" }).getByLabel("Type").inputValue()).toBe(type)
    expect(new URL(list.url()).searchParams.get("type")).toBe(type)
    expect(await list.locator("tr[data-url]").evaluateAll((rows) => rows.every((r) => r.children[1].textContent === r.ownerDocument.defaultView.location.search.slice(6)))).toBe(true)
    expect(await axe(list)).toEqual([])
    await screenshot(list, "entities")
    await row.locator("a").focus() // a keyboard user on the row while it changes

    const page = await newPage()
    await openEntity(page, type, id)
    await page.getByRole("button", { name: "Kill" }).click()
    await page.getByRole("group", { name: /^Kill / }).getByRole("button", { name: "Kill" }).click() // confirmed in the page
    await expect.poll(() => page.locator("#entity-status").textContent()).toBe("killed")
    expect(page.dialogs).toEqual([])
    const box = page.getByRole("combobox", { name: "Message" })
    await expect.poll(() => box.getAttribute("aria-disabled")).toBe("true")
    expect(await page.getByRole("button", { name: "Send", exact: true }).isDisabled()).toBe(true)
    await expect.poll(() => page.locator(".fold-system").last().locator(".fold-summary").textContent()).toMatch(/SIGKILL/)
    // the list page, opened before the kill, follows it without a reload, and the focus
    // stays on the row's link
    await expect.poll(() => row.locator(".badge").textContent()).toBe("killed")
    expect(await list.evaluate(() => document.activeElement?.closest("tr")?.getAttribute("data-url"))).toBe(`/${type}/${id}`)
    // following the link moves the focus to the entity view's composer
    await row.locator("a").click()
    await expect.poll(() => list.evaluate(() => document.activeElement?.id)).toBe("composer-input")
    expect(list.errors).toEqual([])
    expect(page.errors).toEqual([])
    await list.context().close()
    await page.context().close()
  })
})

describe("the console in jwt mode", () => {
  let jwt, token

  beforeAll(async () => {
    const keys = await jwtKeys("user:ada")
    token = keys.token
    jwt = await startEntityd(["--auth", "jwt", "--jwt-keys", keys.jwks, "--no-demo"])
  }, 30000)

  afterAll(async () => {
    await jwt?.stop()
  })

  it("asks for a token once per tab and then works", async () => {
    const type = `jwt-${run}`
    const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" }
    expect((await fetch(`${jwt.url}/_electric/entity-types`, { method: "POST", headers: auth,
      body: JSON.stringify({ name: type, description: "jwt", slash_commands: [{ name: "hello" }] }) })).status).toBe(201)
    expect((await fetch(`${jwt.url}/_electric/entities/${type}/e1`, { method: "PUT", headers: auth, body: "{}" })).status).toBe(201)

    const page = await newPage()
    await page.goto(`${jwt.url}/_electric/console/entities/${type}/e1`)
    const dialog = page.getByRole("dialog", { name: "Bearer token" })
    await dialog.waitFor()
    expect(await axe(page)).toEqual([])
    await dialog.getByLabel("Token").fill(token)
    await dialog.getByRole("button", { name: "Use this token" }).click()
    await page.locator("#view[data-ready=true]").waitFor({ timeout: 10000 })
    await expect.poll(() => page.locator("#entity-status").textContent()).toBe("idle")
    await openPicker(page)
    expect(await optionNames(page)).toEqual(["/hello"])
    await page.keyboard.press("Enter")
    await page.keyboard.press("Control+Enter")
    const read = async () => (await (await fetch(`${jwt.url}/${type}/e1/main?offset=-1`, { headers: auth })).json())
      .find((ev) => ev.type === "inbox")
    const sent = await waitFor(read, "the message")
    expect(sent.value.from).toBe("/principal/user%3Aada")
    expect(sent.value.payload).toEqual({ source: "/hello ", nodes: [{ kind: "slash_command", start: 0, end: 6, raw: "/hello", name: "hello" }] })

    // the token is the tab's: the entity list loads without asking again
    await page.getByRole("link", { name: "Entities" }).click()
    await expect.poll(() => page.locator(`tr[data-url="/${type}/e1"]`).count()).toBe(1)
    expect(await dialog.isVisible()).toBe(false)
    // a new tab (another context) asks again
    const other = await newPage()
    await other.goto(`${jwt.url}/_electric/console/`)
    await other.getByRole("dialog", { name: "Bearer token" }).waitFor()
    expect(page.errors).toEqual([])
    await page.context().close()
    await other.context().close()
  })
})
