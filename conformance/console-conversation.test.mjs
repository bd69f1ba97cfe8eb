// The console's entity view as a conversation, in Debian's Chromium (playwright-core)
// against an entityd that runs the demo assistant: Enter sends and Shift+Enter makes a
// new line; a message shows pending at once and settles when its inbox event arrives, or
// shows "Not sent" with a Retry that stores it exactly once; system events fold into one
// row and context/tool events collapse; the empty state suggests the demo's /quickstart;
// the focus lands in the composer; an unknown entity is a not-found view; the actions
// follow the status, errors are words and clear; Kill is confirmed in the page; axe in
// both colour schemes and no horizontal overflow on a phone.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launchChromium, startEntityd, waitFor } from "./lib.mjs"
import { axe, consoleClient } from "./console-lib.mjs"

let server, url, browser
const { call, events } = consoleClient(() => url)
const run = Date.now().toString(36)

const inbox = async (path) => (await events(path)).filter((ev) => ev.type === "inbox" && ev.headers.operation === "insert")

// spawn makes an entity and returns its write token (for appending a handler's events).
async function spawn(type, id) {
  const r = await call("PUT", `/_electric/entities/${type}/${id}`, {})
  expect(r.status).toBe(201)
  return r.headers.get("x-write-token")
}

// append writes State Protocol events to the entity's main stream, as a handler does.
async function append(type, id, writeToken, evs) {
  const res = await fetch(`${url}/${type}/${id}/main`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${writeToken}` },
    body: JSON.stringify(evs),
  })
  expect(res.status, await res.text()).toBe(204)
}

// newPage opens a page that records script errors and any native dialog (none is expected).
async function newPage(options = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, ...options })
  const page = await context.newPage()
  page.errors = []
  page.dialogs = []
  page.on("pageerror", (e) => page.errors.push(e.message))
  page.on("dialog", (d) => {
    page.dialogs.push(d.type())
    void d.dismiss()
  })
  return page
}

async function openEntity(page, type, id) {
  await page.goto(`${url}/_electric/console/entities/${type}/${id}`)
  await page.locator("#view[data-ready=true]").waitFor({ timeout: 10000 })
}

const box = (page) => page.getByRole("combobox", { name: "Message" })
const visibleActions = (page) => page.locator(".entity-head .actions button:visible").allTextContents()

beforeAll(async () => {
  server = await startEntityd([]) // with the demo assistant
  url = server.url
  browser = await launchChromium()
}, 30000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
})

describe("the entity view as a conversation", () => {
  const type = `conv-${run}`

  beforeAll(async () => {
    const r = await call("POST", "/_electric/entity-types", { name: type, description: "A conversation",
      slash_commands: [{ name: "alpha", description: "First" }, { name: "beta", description: "Second" }] })
    expect(r.status).toBe(201)
  })

  it("opens with the focus in the composer, and Enter sends while Shift+Enter makes a new line", async () => {
    const id = `enter-${run}`
    await spawn(type, id)
    const page = await newPage()
    await openEntity(page, type, id)
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("composer-input")
    expect(await page.locator("#composer-help").textContent()).toBe("Type / for commands. Enter to send · Shift+Enter for a new line.")
    // the heading stays reachable, before the composer in the page
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe(`/${type}/${id}`)

    // hold the send so that the pending bubble can be seen
    let release
    const held = new Promise((r) => (release = r))
    await page.route("**/send", async (route) => {
      await held
      await route.continue()
    })
    await page.keyboard.type("first line")
    await page.keyboard.press("Shift+Enter")
    await page.keyboard.type("second line")
    await page.keyboard.press("Enter")
    const pending = page.locator(".msg.pending")
    await expect.poll(() => pending.count()).toBe(1)
    expect(await pending.getAttribute("data-state")).toBe("sending")
    expect(await pending.locator(".delivery").textContent()).toBe("Sending…")
    expect(await pending.locator(".composed").textContent()).toBe("first line\nsecond line")
    expect(await box(page).textContent()).toBe("") // the message left the box at once
    expect(await inbox(`/${type}/${id}`)).toEqual([])
    release()

    // it settles when its inbox event arrives on the stream: the pending bubble gives way
    await expect.poll(() => pending.count()).toBe(0)
    const mine = page.locator(".timeline .ev-inbox.msg.mine")
    await expect.poll(() => mine.count()).toBe(1)
    expect(await mine.locator(".composed").textContent()).toBe("first line\nsecond line")
    const sent = await inbox(`/${type}/${id}`)
    expect(sent.length).toBe(1)
    expect(sent[0].value.message_type).toBe("composer_input")
    expect(sent[0].value.payload).toEqual({ source: "first line\nsecond line" })
    expect(await mine.getAttribute("data-key")).toBe(sent[0].key)
    // a usual message carries no delivery badges and no "from <me>"
    expect(await mine.locator(".badge").count()).toBe(0)
    expect(await mine.locator(".from").isVisible()).toBe(false)
    expect(await page.locator(".timeline-box").innerText()).not.toMatch(/composer_input|immediate|processed|system:dev-local/)

    // Ctrl+Enter still sends; Enter in the open picker picks
    await page.keyboard.type("/al")
    await expect.poll(() => page.getByRole("listbox", { name: "Slash commands" }).isVisible()).toBe(true)
    await page.keyboard.press("Enter")
    expect(await box(page).locator(".chip").textContent()).toBe("/alpha")
    await page.keyboard.press("Control+Enter")
    await waitFor(async () => (await inbox(`/${type}/${id}`)).length === 2, "the second message")
    expect((await inbox(`/${type}/${id}`))[1].value.payload).toEqual({ source: "/alpha ",
      nodes: [{ kind: "slash_command", start: 0, end: 6, raw: "/alpha", name: "alpha" }] })
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("says who sent a message only when it is not the viewer or several people talk", async () => {
    const id = `from-${run}`
    await spawn(type, id)
    const page = await newPage()
    await openEntity(page, type, id)
    await page.keyboard.type("mine")
    await page.keyboard.press("Enter")
    const mine = page.locator(".timeline-box .ev-inbox.msg.mine")
    await expect.poll(() => mine.count()).toBe(1)
    expect(await mine.locator(".from").isVisible()).toBe(false)
    // another principal (dev mode names the caller with Electric-Principal; a system one may write)
    expect((await call("POST", `/_electric/entities/${type}/${id}/send`, { type: "composer_input", payload: { source: "from bob" } },
      { "electric-principal": "system:bob" })).status).toBe(200)
    const theirs = page.locator(".timeline-box .ev-inbox.msg.theirs")
    await expect.poll(() => theirs.count()).toBe(1)
    expect(await theirs.locator(".from").textContent()).toBe("from system:bob")
    expect(await theirs.locator(".from").isVisible()).toBe(true)
    // two people talk: every message says who sent it
    expect(await mine.locator(".from").textContent()).toBe("from system:dev-local")
    expect(await mine.locator(".from").isVisible()).toBe(true)
    // a typed message in a mode that is not the usual shows both
    expect((await call("POST", `/_electric/entities/${type}/${id}/send`, { type: "composer_input", mode: "paused", payload: { source: "later" } })).status).toBe(200)
    await expect.poll(() => mine.count()).toBe(2)
    expect(await mine.last().locator(".badge").allTextContents()).toEqual(["paused", "pending"])
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("on a touch screen the hint says nothing of keys and Enter makes a new line", async () => {
    const id = `touch-${run}`
    await spawn(type, id)
    const page = await newPage({ viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true })
    await openEntity(page, type, id)
    expect(await page.locator("#composer-help").textContent()).toBe("Type / for commands.")
    await box(page).click()
    await page.keyboard.type("one")
    await page.keyboard.press("Enter")
    await page.keyboard.type("two")
    expect(await box(page).innerText()).toBe("one\ntwo")
    await page.getByRole("button", { name: "Send", exact: true }).click()
    await waitFor(async () => (await inbox(`/${type}/${id}`)).length === 1, "the message")
    expect((await inbox(`/${type}/${id}`))[0].value.payload.source).toBe("one\ntwo")
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("a send that gets no answer shows Not sent in words, and Retry stores it exactly once", async () => {
    const id = `retry-${run}`
    await spawn(type, id)
    const page = await newPage()
    await openEntity(page, type, id)
    const keys = []
    let attempt = 0
    await page.route("**/send", async (route) => {
      keys.push(JSON.parse(route.request().postData()).key)
      if (++attempt === 1) await route.abort("internetdisconnected")
      else await route.continue()
    })
    await page.keyboard.type("survives a lost connection")
    await page.keyboard.press("Enter")
    const failed = page.locator(".msg.pending.failed")
    await failed.waitFor()
    expect(await failed.locator(".delivery").textContent()).toBe("Not sent")
    expect(await failed.locator(".error-summary").textContent()).toBe("The server cannot be reached. Retry sends it once it is back.")
    expect(await page.locator("#view").innerText()).not.toMatch(/Failed to fetch/)
    expect(await inbox(`/${type}/${id}`)).toEqual([])
    await failed.getByRole("button", { name: "Retry" }).click()
    await expect.poll(() => page.locator(".msg.pending").count()).toBe(0)
    await expect.poll(() => page.locator(".timeline .ev-inbox.msg.mine .composed").textContent()).toBe("survives a lost connection")
    expect(keys.length).toBe(2)
    expect(keys[1]).toBe(keys[0]) // the retry is the same message, by its idempotency key
    const stored = await inbox(`/${type}/${id}`)
    expect(stored.map((ev) => ev.key)).toEqual([keys[0]])

    // an answer lost after the message was stored: the bubble settles from the stream,
    // and a retry of the same key adds nothing
    await page.unroute("**/send")
    const lost = []
    await page.route("**/send", async (route) => {
      lost.push(JSON.parse(route.request().postData()).key)
      await route.fetch() // the server stores it …
      await route.abort("connectionreset") // … and the answer is lost
    })
    await page.keyboard.type("stored but unanswered")
    await page.keyboard.press("Enter")
    await expect.poll(() => page.locator(".timeline .ev-inbox.msg.mine").count()).toBe(2)
    await expect.poll(() => page.locator(".msg.pending").count()).toBe(0)
    const again = await call("POST", `/_electric/entities/${type}/${id}/send`,
      { type: "composer_input", key: lost[0], mode: "immediate", payload: { source: "stored but unanswered" } })
    expect(again.status).toBe(200)
    expect((await inbox(`/${type}/${id}`)).map((ev) => ev.value.payload.source)).toEqual(["survives a lost connection", "stored but unanswered"])
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("a message the server refuses goes back in the box with the reason in words", async () => {
    const id = `refused-${run}`
    await spawn(type, id)
    const page = await newPage()
    await openEntity(page, type, id)
    await page.route("**/send", (route) => route.fulfill({ status: 413, contentType: "application/json",
      body: JSON.stringify({ error: { code: "PAYLOAD_TOO_LARGE", message: "Body exceeds 1 MiB" } }) }))
    await page.keyboard.type("too big")
    await page.keyboard.press("Enter")
    const errors = page.locator("#composer-errors")
    await expect.poll(() => errors.locator(".error-summary").textContent()).toBe("Not sent: The message is too large for the server.")
    expect(await errors.locator(".error-code").textContent()).toBe("413 PAYLOAD_TOO_LARGE: Body exceeds 1 MiB")
    expect(await box(page).textContent()).toBe("too big")
    expect(await page.locator(".msg.pending").count()).toBe(0)
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("folds system events into one row and collapses context and tool events", async () => {
    const id = `fold-${run}`
    const wt = await spawn(type, id)
    expect((await call("POST", `/_electric/entities/${type}/${id}/tags/team`, { value: "core" })).status).toBe(200)
    expect((await call("POST", `/_electric/entities/${type}/${id}/send`, { type: "composer_input", key: "m1", payload: { source: "what is new?" } })).status).toBe(200)
    await append(type, id, wt, [
      { type: "run", key: "run-1", value: { status: "started" }, headers: { operation: "insert" } },
      { type: "context_inserted", key: "ctx-1", value: { id: "ctx-1", name: "notes", attrs: {}, content: "release notes ".repeat(40), timestamp: new Date().toISOString() }, headers: { operation: "insert" } },
      { type: "tool_call", key: "tc-1", value: { run_id: "run-1", tool_name: "search_docs", status: "started", args: { q: "new" } }, headers: { operation: "insert" } },
      { type: "tool_call", key: "tc-1", value: { run_id: "run-1", tool_name: "search_docs", status: "completed", args: { q: "new" }, result: "2 hits" }, headers: { operation: "update" } },
      { type: "text", key: "run-1:t", value: { status: "streaming", run_id: "run-1" }, headers: { operation: "insert" } },
      { type: "text_delta", key: "run-1:t:0", value: { text_id: "run-1:t", run_id: "run-1", delta: "Two things are new." }, headers: { operation: "insert" } },
      { type: "text", key: "run-1:t", value: { status: "completed", run_id: "run-1" }, headers: { operation: "update" } },
      { type: "run", key: "run-1", value: { status: "completed", finish_reason: "stop" }, headers: { operation: "update" } },
    ])
    const page = await newPage()
    await openEntity(page, type, id)
    const items = page.locator(".timeline:not(.outbox) > li")
    await expect.poll(() => items.count()).toBe(4)
    // created, two commands, a tag: one row, first; then the message, the reply, and the
    // context and tool events in one collapsed line
    expect(await items.evaluateAll((lis) => lis.map((li) => li.className.split(" ").filter((c) => /^(fold-|ev-inbox|ev-reply)/.test(c)).join(" "))))
      .toEqual(["fold-system", "ev-inbox", "ev-reply", "fold-activity"])
    const system = page.locator(".fold-system")
    expect(await system.locator(".fold-summary").textContent()).toBe("Created · 2 commands changed · 1 tag changed")
    expect(await system.locator("details").getAttribute("open")).toBe(null)
    expect(await system.locator(".fold-events li").count()).toBe(0) // rendered when opened
    await system.locator("summary").click()
    // the events render on the details' toggle event, which the browser fires after the click
    await expect.poll(() => system.locator(".fold-events li").count()).toBe(4)
    expect(await system.locator(".fold-events li").first().getAttribute("data-type")).toBe("entity_created")

    const activity = page.locator(".fold-activity")
    expect(await activity.locator(".fold-summary").textContent()).toBe("Context inserted · tool search_docs (completed)")
    expect(await activity.locator("details").getAttribute("open")).toBe(null)
    await activity.locator("summary").click()
    await expect.poll(() => activity.locator(".fold-events li").evaluateAll((lis) => lis.map((li) => li.dataset.type)))
      .toEqual(["context_inserted", "tool_call", "tool_call"])
    // the reply is one bubble on the entity's side, the message on the viewer's
    expect(await page.locator(".ev-reply.msg.theirs .reply").textContent()).toBe("Two things are new.")
    expect(await page.locator(".ev-inbox.msg.mine .composed").textContent()).toBe("what is new?")

    // live: a signal after the reply is a new system row; a second tool call joins the
    // activity line it follows
    await append(type, id, wt, [{ type: "tool_call", key: "tc-2", value: { tool_name: "fetch_url", status: "completed" }, headers: { operation: "insert" } }])
    await expect.poll(() => activity.locator(".fold-summary").textContent()).toBe("Context inserted · tool search_docs (completed) · tool fetch_url (completed)")
    expect(await activity.locator(".fold-events li").count()).toBe(4) // it stayed open
    expect((await call("POST", `/_electric/entities/${type}/${id}/signal`, { signal: "SIGSTOP" })).status).toBe(200)
    await expect.poll(() => page.locator(".fold-system").count()).toBe(2)
    expect(await page.locator(".fold-system").last().locator(".fold-summary").textContent()).toBe("Signal SIGSTOP")

    expect(await axe(page)).toEqual([])
    await page.emulateMedia({ colorScheme: "dark" })
    expect(await axe(page)).toEqual([])
    expect(page.errors).toEqual([])
    await page.context().close()

    // a phone: no horizontal overflow, with the rows open
    const phone = await newPage({ viewport: { width: 390, height: 844 } })
    await openEntity(phone, type, id)
    await phone.locator(".fold-activity summary").click()
    await phone.locator(".fold-activity .fold-events details summary").first().click()
    expect(await phone.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true)
    expect(await axe(phone)).toEqual([])
    // the kill confirmation and the curl menu fit too
    await phone.getByRole("button", { name: "Kill" }).click()
    await phone.getByRole("group", { name: /^Kill / }).waitFor()
    expect(await phone.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true)
    await phone.getByRole("button", { name: "Cancel" }).click()
    await phone.locator(".more-menu summary").click()
    expect(await phone.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true)
    expect(phone.errors).toEqual([])
    await phone.context().close()
  }, 90000) // axe three times

  it("an empty timeline suggests the demo's /quickstart, which goes in the composer", async () => {
    const id = `empty-${run}`
    await spawn("assistant", id)
    const page = await newPage()
    await openEntity(page, "assistant", id)
    const empty = page.locator(".timeline-empty")
    await expect.poll(() => empty.isVisible()).toBe(true)
    expect(await empty.locator("p").first().textContent()).toBe("No messages yet. Write the first one below.")
    await empty.getByRole("button", { name: "Try /quickstart" }).click()
    expect(await box(page).locator(".chip").textContent()).toBe("/quickstart")
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("composer-input")
    await page.keyboard.press("Enter")
    await expect.poll(() => empty.isVisible()).toBe(false)
    const sent = await waitFor(async () => (await inbox(`/assistant/${id}`))[0], "the message")
    expect(sent.value.payload.nodes[0].name).toBe("quickstart")
    await expect.poll(() => page.locator(".ev-reply .reply").count(), { timeout: 10000 }).toBe(1)
    expect(await axe(page)).toEqual([])
    expect(page.errors).toEqual([])
    await page.context().close()
  }, 60000)

  it("an unknown entity is a not-found view with a way back and nothing to act on", async () => {
    const page = await newPage()
    for (const [t, i] of [["assistant", `nobody-${run}`], [`no-such-type-${run}`, "x"]]) {
      await page.goto(`${url}/_electric/console/entities/${t}/${i}`)
      const nf = page.locator(".not-found")
      await nf.waitFor({ timeout: 10000 })
      expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("No such entity")
      expect(await nf.locator("p").first().textContent()).toBe(`There is no entity /${t}/${i} (or you may not read it).`)
      expect(await page.locator("#view button").count()).toBe(0)
      expect(await page.locator("body").innerText()).not.toMatch(/HTTP Error|http:\/\/|\{"/)
    }
    expect(await axe(page)).toEqual([])
    await page.getByRole("link", { name: "Back to Entities" }).click()
    await page.waitForURL("**/_electric/console/entities")
    await expect.poll(() => page.getByRole("heading", { level: 1 }).textContent()).toMatch(/^Entities/)
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("shows only the actions the status allows; errors are words and clear on the next success", async () => {
    const id = `status-${run}`
    await spawn(type, id)
    const page = await newPage()
    await openEntity(page, type, id)
    await expect.poll(() => visibleActions(page)).toEqual(["Pause", "Stop", "Kill"])

    // a refused signal: named in words, with the server's own words
    await page.route("**/signal", (route) => route.fulfill({ status: 409, contentType: "application/json",
      body: JSON.stringify({ error: { code: "INVALID_SIGNAL", message: "SIGSTOP not allowed now" } }) }), { times: 1 })
    await page.getByRole("button", { name: "Pause" }).click()
    const errors = page.locator(".entity-view > .errors")
    await expect.poll(() => errors.locator(".error-summary").textContent()).toBe("The entity cannot take this signal now.")
    expect(await errors.locator(".error-code").textContent()).toBe("409 INVALID_SIGNAL: SIGSTOP not allowed now")

    // by keyboard: the focus moves from Pause, gone once paused, to Resume
    await page.getByRole("button", { name: "Pause" }).focus()
    await page.keyboard.press("Enter")
    await expect.poll(() => page.locator("#entity-status").textContent()).toBe("paused")
    expect(await errors.textContent()).toBe("") // cleared by the success
    await expect.poll(() => visibleActions(page)).toEqual(["Resume", "Stop", "Kill"])
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Resume")
    await page.getByRole("button", { name: "Resume" }).click()
    await expect.poll(() => page.locator("#entity-status").textContent()).toBe("idle")
    await expect.poll(() => visibleActions(page)).toEqual(["Pause", "Stop", "Kill"])
    const signals = (await events(`/${type}/${id}`)).filter((ev) => ev.type === "signal").map((ev) => ev.value.signal)
    expect(signals).toEqual(["SIGSTOP", "SIGCONT"])
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("confirms Kill in the page, copies actions as curl, and leaves nothing to act on once killed", async () => {
    const id = `kill-${run}`
    await spawn(type, id)
    const page = await newPage()
    await page.context().grantPermissions(["clipboard-read", "clipboard-write"], { origin: url })
    await openEntity(page, type, id)

    // copy as curl: the kill, and the message in the box
    await page.locator(".more-menu summary").click()
    await page.getByRole("button", { name: "Kill as curl" }).click()
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(`curl -sS -X DELETE '${url}/_electric/entities/${type}/${id}'`)
    await page.locator(".more-menu summary").click()
    await box(page).click()
    await page.keyboard.type("hi")
    await page.getByRole("button", { name: "Copy as curl", exact: true }).click()
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(`curl -sS -X POST '${url}/_electric/entities/${type}/${id}/send' -H 'content-type: application/json' --data-raw '{"type":"composer_input","mode":"immediate","payload":{"source":"hi"}}'`)

    await page.getByRole("button", { name: "Kill" }).click()
    const confirm = page.getByRole("group", { name: `Kill /${type}/${id}? Its stream closes for good.` })
    await confirm.waitFor()
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Cancel")
    expect(await axe(page)).toEqual([])
    await confirm.getByRole("button", { name: "Cancel" }).click()
    expect(await confirm.isVisible()).toBe(false)
    expect(await page.locator("#entity-status").textContent()).toBe("idle")
    await page.getByRole("button", { name: "Kill" }).click()
    await confirm.getByRole("button", { name: "Kill" }).click()
    await expect.poll(() => page.locator("#entity-status").textContent()).toBe("killed")
    await expect.poll(() => visibleActions(page)).toEqual([])
    expect(await confirm.isVisible()).toBe(false)
    await expect.poll(() => box(page).getAttribute("aria-disabled")).toBe("true")
    expect(page.dialogs).toEqual([]) // no confirm()
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("a keyboard user following a link to an entity lands in its composer", async () => {
    const id = `nav-${run}`
    await spawn(type, id)
    const page = await newPage()
    await page.goto(`${url}/_electric/console/entities?type=${type}`)
    const link = page.locator(`tr[data-url="/${type}/${id}"] a`)
    await link.focus()
    await page.keyboard.press("Enter")
    await page.waitForURL(`**/_electric/console/entities/${type}/${id}`)
    await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe("composer-input")
    await page.keyboard.type("by keyboard")
    await page.keyboard.press("Enter")
    await waitFor(async () => (await inbox(`/${type}/${id}`)).length === 1, "the message")
    expect(page.errors).toEqual([])
    await page.context().close()
  })
})
