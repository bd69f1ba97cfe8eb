// The console's power tools in Debian's Chromium: the typed-message form generated from a
// type's inbox schemas (client checks and the server's 422 at their fields), "copy as
// curl" commands that, run by curl, do what the page would, the stream inspector
// (offsets, live follow, type filter, jump to an offset), the Ctrl+K palette, and the
// register → spawn flow with re-registration asked in the page; axe-core in both themes.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { execFileSync } from "node:child_process"
import { launchChromium, startEntityd, waitFor } from "./lib.mjs"
import { axe, consoleClient } from "./console-lib.mjs"

let server, url, browser
const { call, events } = consoleClient(() => url)
const run = Date.now().toString(36)
const type = `notes-${run}`

async function newPage(options = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, permissions: ["clipboard-read", "clipboard-write"], ...options })
  const page = await context.newPage()
  page.errors = []
  page.prompted = []
  page.on("pageerror", (e) => page.errors.push(e.message))
  // without a clipboard the curl button shows the command in a prompt
  page.on("dialog", (d) => {
    page.prompted.push(d.defaultValue())
    d.accept()
  })
  return page
}

// copied clicks a "Copy as curl" button and returns the command it copied.
async function copied(page, button) {
  await page.evaluate(() => navigator.clipboard.writeText(""))
  await button.click()
  return await waitFor(async () => page.prompted.pop() || (await page.evaluate(() => navigator.clipboard.readText())), "the copied command")
}

// sh runs a copied command in a POSIX shell, as a user pasting it would.
function sh(command) {
  expect(command).toMatch(/^curl /)
  return execFileSync("/bin/sh", ["-c", command], { encoding: "utf8", timeout: 10000 })
}

async function axeBothThemes(page) {
  const found = []
  for (const colorScheme of ["light", "dark"]) {
    await page.emulateMedia({ colorScheme })
    found.push(...(await axe(page)).map((v) => `${colorScheme}: ${v}`))
  }
  await page.emulateMedia({ colorScheme: "light" })
  return found
}

const NOTE = {
  type: "object",
  properties: {
    text: { type: "string", minLength: 1, description: "What to note" },
    priority: { type: "integer", minimum: 1, maximum: 5 },
    code: { type: "string", not: { const: "forbidden" } }, // checked by the server only
    color: { enum: ["red", "green"] },
    meta: { type: "object", properties: { pinned: { type: "boolean" } } },
    extra: { type: "array", items: { type: "string" } }, // edited as JSON
  },
  required: ["text"],
}

beforeAll(async () => {
  server = await startEntityd([])
  url = server.url
  browser = await launchChromium()
  const r = await call("POST", "/_electric/entity-types", { name: type, description: "Keeps notes", inbox_schemas: { note: NOTE, ping: { type: "object" } } })
  expect(r.status, JSON.stringify(r.body)).toBe(201)
  expect((await call("PUT", `/_electric/entities/${type}/t1`, {})).status).toBe(201)
}, 30000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
})

describe("the console's power tools", { timeout: 90000 }, () => {
  it("sends a typed message from the form generated from the inbox schema", async () => {
    const page = await newPage()
    await page.goto(`${url}/_electric/console/entities/${type}/t1`)
    const form = page.getByRole("form", { name: "Typed message" })
    await form.waitFor()
    expect(await form.getByLabel("Inbox schema").inputValue()).toBe("note")
    expect(await form.locator("#typed-type option").allTextContents()).toEqual(["note", "ping"])
    const send = form.getByRole("button", { name: "Send message" })
    const inboxCount = async () => (await events(`/${type}/t1`)).filter((e) => e.type === "inbox").length

    // the client's checks, each at its field
    await send.click()
    await expect.poll(() => page.locator("#typed-text-error").textContent()).toBe("is required")
    expect(await page.locator("#typed-text").getAttribute("aria-invalid")).toBe("true")
    await form.getByLabel("text (required)").fill("buy milk")
    await form.getByLabel("priority").fill("9")
    await form.getByLabel("extra (JSON)").fill("[oops")
    await send.click()
    await expect.poll(() => page.locator("#typed-priority-error").textContent()).toBe("must be ≤ 5")
    expect(await page.locator("#typed-extra-error").textContent()).toMatch(/^not JSON/)
    expect(await page.locator("#typed-text-error").isVisible()).toBe(false)
    expect(await inboxCount()).toBe(0)

    // what only the server checks comes back as a 422 shown at its field
    await form.getByLabel("priority").fill("3")
    await form.getByLabel("extra (JSON)").fill('["a", "b"]')
    await form.getByLabel("code").fill("forbidden")
    await send.click()
    await expect.poll(() => page.locator("#typed-code-error").textContent()).toMatch(/./)
    expect(await form.locator(".errors").textContent()).toMatch(/422/)
    expect(await page.locator("#typed-code").getAttribute("aria-invalid")).toBe("true")
    expect(await inboxCount()).toBe(0)

    await form.getByLabel("code").fill("ok")
    await form.getByLabel("color").selectOption("green")
    await form.getByLabel("pinned").check()
    await send.click()
    await expect.poll(() => form.getByRole("status").textContent()).toMatch(/^Sent note/)
    expect(await page.locator("#typed-code-error").isVisible()).toBe(false)
    expect(await axeBothThemes(page)).toEqual([])
    const sent = (await events(`/${type}/t1`)).filter((e) => e.type === "inbox")
    expect(sent).toHaveLength(1)
    expect(sent[0].value.message_type).toBe("note")
    expect(sent[0].value.payload).toEqual({ text: "buy milk", priority: 3, code: "ok", color: "green", meta: { pinned: true }, extra: ["a", "b"] })

    // copy as curl: the command sends the same typed message
    await form.getByLabel("text (required)").fill("from curl")
    const cmd = await copied(page, form.getByRole("button", { name: "Copy as curl" }))
    expect(cmd).toContain(`${url}/_electric/entities/${type}/t1/send`)
    expect(JSON.parse(sh(cmd))).toHaveProperty("txid")
    const all = (await events(`/${type}/t1`)).filter((e) => e.type === "inbox")
    expect(all).toHaveLength(2)
    expect(all[1].value.payload.text).toBe("from curl")
    expect(all[1].value.message_type).toBe("note")

    // a type without inbox schemas has no typed form
    const plain = `plain-${run}`
    expect((await call("POST", "/_electric/entity-types", { name: plain, description: "no inbox schemas" })).status).toBe(201)
    expect((await call("PUT", `/_electric/entities/${plain}/p1`, {})).status).toBe(201)
    await page.goto(`${url}/_electric/console/entities/${plain}/p1`)
    await page.locator("#view[data-ready=true]").waitFor({ timeout: 10000 })
    expect(await page.locator(".typed-send").isHidden()).toBe(true)
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("copies the spawn and the registration as curl commands that do the same", async () => {
    const page = await newPage()
    await page.goto(`${url}/_electric/console/entities?spawn=${type}`)
    const spawnForm = page.getByRole("form", { name: "Spawn an entity" })
    await expect.poll(() => spawnForm.getByLabel("Type").inputValue()).toBe(type)
    await spawnForm.getByLabel("Id").fill("from-curl")
    await spawnForm.getByLabel("Tags").fill("via=curl")
    const cmd = await copied(page, spawnForm.getByRole("button", { name: "Copy as curl" }))
    expect(cmd).toMatch(/^curl -sS -X PUT /)
    expect((await call("GET", `/_electric/entities/${type}/from-curl`)).status).toBe(404)
    sh(cmd)
    const e = await call("GET", `/_electric/entities/${type}/from-curl`)
    expect(e.status).toBe(200)
    expect(e.body.tags).toEqual({ via: "curl" })
    // the page follows the entities shape: the curl-spawned entity appears in the list
    await page.locator(`tr[data-url="/${type}/from-curl"]`).waitFor()

    await page.goto(`${url}/_electric/console/types`)
    const curlType = `curl-${run}`
    await page.getByLabel("Type definition (JSON)").fill(JSON.stringify({ name: curlType, description: "from curl" }))
    const reg = await copied(page, page.locator(".register").getByRole("button", { name: "Copy as curl" }))
    expect(JSON.parse(sh(reg))).toMatchObject({ name: curlType, revision: 1 })
    await page.locator(`.type-card[data-type="${curlType}"]`).waitFor()
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("inspects a stream: offsets, live follow, type filter, jump to an offset, curl", async () => {
    const page = await newPage()
    await page.goto(`${url}/_electric/console/entities/${type}/t1`)
    await page.locator("#view[data-ready=true]").waitFor({ timeout: 10000 })
    await page.getByRole("link", { name: "Inspect stream", exact: true }).click()
    await page.waitForURL(`**/_electric/console/inspect?path=${encodeURIComponent(`/${type}/t1/main`)}`)
    const rows = page.locator("#inspect-rows > li")
    let evs = await events(`/${type}/t1`)
    await expect.poll(() => rows.count()).toBe(evs.length)
    // each event's own offset, as the stream gives it
    expect(await rows.evaluateAll((lis) => lis.map((li) => li.getAttribute("data-offset")))).toEqual(evs.map((e) => e.headers.offset))
    expect(await rows.first().locator(".inspect-offset").textContent()).toBe(evs[0].headers.offset)
    expect(await rows.evaluateAll((lis) => lis.map((li) => li.getAttribute("data-type")))).toEqual(evs.map((e) => e.type))
    await expect.poll(() => page.locator("#inspect-summary").textContent()).toMatch(/following live/)

    // follows a live append
    expect((await call("POST", `/_electric/entities/${type}/t1/send`, { type: "note", key: `live-${run}`, payload: { text: "live" } })).status).toBe(200)
    await page.locator(`#inspect-rows > li[data-type="inbox"]`).filter({ hasText: `live-${run}` }).waitFor()

    // filters by event type: the select lists the types seen
    const typesSeen = await page.getByLabel("Event type").locator("option").allTextContents()
    expect(typesSeen).toContain("inbox")
    expect(typesSeen).toContain("entity_created")
    await page.getByLabel("Event type").selectOption("inbox")
    evs = await events(`/${type}/t1`)
    const inbox = evs.filter((e) => e.type === "inbox")
    await expect.poll(() => page.locator("#inspect-rows > li:visible").count()).toBe(inbox.length)
    expect(await page.locator("#inspect-rows > li:visible").evaluateAll((lis) => lis.map((li) => li.getAttribute("data-offset"))))
      .toEqual(inbox.map((e) => e.headers.offset))
    await page.getByLabel("Event type").selectOption("")

    // with follow off, an append waits until follow is on again
    await page.getByLabel("Follow live").uncheck()
    await expect.poll(() => page.locator("#inspect-summary").textContent()).toMatch(/not following/)
    expect((await call("POST", `/_electric/entities/${type}/t1/send`, { type: "note", key: `later-${run}`, payload: { text: "later" } })).status).toBe(200)
    await page.getByLabel("Follow live").check()
    await page.locator("#inspect-rows > li").filter({ hasText: `later-${run}` }).waitFor()

    // jumps to an offset: the events after it
    evs = await events(`/${type}/t1`)
    await page.getByLabel("Read from offset").fill(evs[1].headers.offset)
    await page.getByRole("button", { name: "Read", exact: true }).click()
    await expect.poll(async () => rows.evaluateAll((lis) => lis.map((li) => li.getAttribute("data-offset"))))
      .toEqual(evs.slice(2).map((e) => e.headers.offset))
    expect(new URL(page.url()).searchParams.get("offset")).toBe(evs[1].headers.offset)

    // the read as curl
    const cmd = await copied(page, page.getByRole("button", { name: "Copy as curl" }))
    expect(JSON.parse(sh(cmd)).map((e) => e.headers.offset)).toEqual(evs.slice(2).map((e) => e.headers.offset))

    expect(await axeBothThemes(page)).toEqual([])
    // the slash-commands stream is linked too
    await page.goto(`${url}/_electric/console/entities/${type}/t1`)
    const link = page.getByRole("link", { name: "Inspect slash-commands stream" })
    expect(await link.getAttribute("href")).toBe(`/_electric/console/inspect?path=${encodeURIComponent(`/${type}/t1/slash-commands`)}`)
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("fits a phone: the inspector has no horizontal overflow at 390×844", async () => {
    const page = await newPage({ viewport: { width: 390, height: 844 } })
    await page.goto(`${url}/_electric/console/inspect?path=${encodeURIComponent(`/${type}/t1/main`)}`)
    await page.locator("#inspect-rows > li").first().waitFor()
    await expect.poll(() => page.locator("#inspect-summary").textContent()).toMatch(/up to date/)
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true)
    expect(await axeBothThemes(page)).toEqual([])
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("Ctrl+K opens a palette: typing filters, Enter opens the entity, Escape closes", async () => {
    const page = await newPage()
    await page.goto(`${url}/_electric/console/types`)
    await page.locator(`.type-card[data-type="${type}"]`).waitFor()
    await page.keyboard.press("Control+k")
    const dialog = page.getByRole("dialog", { name: "Jump to" })
    await dialog.waitFor()
    const box = dialog.getByRole("combobox", { name: "Jump to" })
    expect(await box.evaluate((el) => el === document.activeElement)).toBe(true)
    const opts = dialog.getByRole("listbox").getByRole("option")
    await expect.poll(() => opts.count()).toBeGreaterThan(3)
    expect(await axeBothThemes(page)).toEqual([])
    await page.keyboard.type(`${type}/from`)
    await expect.poll(() => opts.allTextContents()).toEqual([`entity /${type}/from-curl idle`])
    await page.keyboard.press("Enter")
    await page.waitForURL(`**/_electric/console/entities/${type}/from-curl`)
    expect(await dialog.isVisible()).toBe(false)
    await page.locator("#view[data-ready=true]").waitFor({ timeout: 10000 })

    // the header's hint opens it too; arrows move; Escape closes
    await page.getByRole("button", { name: /Jump to/ }).click()
    await dialog.waitFor()
    await page.keyboard.type("types")
    await expect.poll(() => opts.first().textContent()).toBe("view Types")
    await page.keyboard.press("Escape")
    await expect.poll(() => dialog.isVisible()).toBe(false)
    await page.keyboard.press("Control+k")
    await dialog.waitFor()
    await page.keyboard.type(type)
    await expect.poll(() => opts.count()).toBeGreaterThan(1)
    const first = await box.getAttribute("aria-activedescendant")
    await page.keyboard.press("ArrowDown")
    const second = await box.getAttribute("aria-activedescendant")
    expect(second).not.toBe(first)
    expect(await page.locator(`#${second}`).getAttribute("aria-selected")).toBe("true")
    const text = await page.locator(`#${second}`).textContent()
    await page.keyboard.press("Enter")
    await expect.poll(() => dialog.isVisible()).toBe(false)
    if (text.startsWith("entity ")) await page.waitForURL(`**/_electric/console/entities${text.split(" ")[1]}`)
    else await page.waitForURL(`**/_electric/console/entities?type=${type}`)
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("goes from a registered type to spawning one, and asks before a new revision", async () => {
    const page = await newPage()
    const t = `flow-${run}`
    await page.goto(`${url}/_electric/console/types`)
    const editor = page.getByLabel("Type definition (JSON)")
    await editor.fill(JSON.stringify({ name: t, description: "first" }))
    await page.getByRole("button", { name: "Register" }).click()
    await expect.poll(() => page.getByRole("status").textContent()).toBe(`Registered ${t}, revision 1.`)
    const card = page.locator(`.type-card[data-type="${t}"]`)
    await card.waitFor()
    await card.locator("summary").click()
    expect(await card.getByRole("link", { name: `Spawn a ${t}` }).getAttribute("href")).toBe(`/_electric/console/entities?spawn=${t}`)

    // registering the same name again asks first; Cancel leaves it at revision 1
    await editor.fill(JSON.stringify({ name: t, description: "second" }))
    await page.getByRole("button", { name: "Register" }).click()
    const ask = page.locator(".register-confirm")
    await expect.poll(() => ask.textContent()).toMatch(`${t} exists at revision 1; registering makes revision 2.`)
    expect(await page.getByRole("button", { name: "Update" }).evaluate((el) => el === document.activeElement)).toBe(true)
    await page.getByRole("button", { name: "Cancel" }).click()
    expect(await ask.isVisible()).toBe(false)
    expect((await call("GET", `/_electric/entity-types/${t}`)).body.revision).toBe(1)
    await page.getByRole("button", { name: "Register" }).click()
    await page.getByRole("button", { name: "Update" }).click()
    await expect.poll(() => page.getByRole("status").textContent()).toBe(`Registered ${t}, revision 2.`)
    expect((await call("GET", `/_electric/entity-types/${t}`)).body).toMatchObject({ revision: 2, description: "second" })
    expect(await axe(page)).toEqual([])

    // straight on to spawning one: the spawn form has the type chosen
    await page.locator(".register-next").getByRole("link", { name: `Spawn a ${t}` }).click()
    // (the list view then rewrites its query to its filters)
    await page.waitForURL((u) => u.pathname === "/_electric/console/entities")
    const spawnForm = page.getByRole("form", { name: "Spawn an entity" })
    await expect.poll(() => spawnForm.getByLabel("Type").inputValue()).toBe(t)
    await spawnForm.getByLabel("Id").fill("s1")
    await spawnForm.getByRole("button", { name: "Spawn" }).click()
    await page.waitForURL(`**/_electric/console/entities/${t}/s1`)
    expect((await call("GET", `/_electric/entities/${t}/s1`)).status).toBe(200)
    expect(page.errors).toEqual([])
    await page.context().close()
  })
})
