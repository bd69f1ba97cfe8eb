// The console's shell and layout in Debian's Chromium (playwright-core) against an
// entityd with the demo assistant: no horizontal overflow at 390x844 on every view,
// the dark palette from prefers-color-scheme and the header's Theme control (remembered
// across a reload), axe-core in both themes, the entity list's loading / empty / no-match
// states, the not-found page, dates in formatTime, and the Tab stops before the list.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { readFileSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import { createRequire } from "node:module"
import { launchChromium, startEntityd } from "./lib.mjs"
import { axe, consoleClient } from "./console-lib.mjs"

// formatTime is checked in the page from its source (dom.ts imports nothing), compiled
// with the console's own esbuild.
const webRequire = createRequire(new URL("../web/package.json", import.meta.url))
const domSource = webRequire("esbuild").transformSync(readFileSync(new URL("../web/src/dom.ts", import.meta.url), "utf8"),
  { loader: "ts", format: "iife", globalName: "consoleDom", target: "es2022" }).code

const LIGHT_BG = "rgb(247, 247, 248)"
const DARK_BG = "rgb(21, 23, 28)"
const PHONE = { width: 390, height: 844 }
const run = Date.now().toString(36)

let server, url, browser
const { call } = consoleClient(() => url)

async function newPage(options = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, ...options })
  const page = await context.newPage()
  page.errors = []
  page.on("pageerror", (e) => page.errors.push(e.message))
  return page
}

// CONSOLE_SCREENSHOTS=<dir> saves each view on a phone in both themes, and at 1280 px in
// the dark theme, there (`make console-screenshots` puts them in docs/console).
const shots = process.env.CONSOLE_SCREENSHOTS
async function screenshot(page, name) {
  if (!shots) return
  mkdirSync(shots, { recursive: true })
  await page.screenshot({ path: join(shots, `${name.replace(/ /g, "-")}.png`) })
}

const overflow = (page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)
const background = (page) => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor)

// The views, each with what says it has rendered.
const longId = `a-very-long-entity-id-that-does-not-fit-on-a-phone-${run}-0123456789abcdef`
const views = () => [
  { name: "entities", path: "/_electric/console/entities", ready: (p) => p.locator(`tr[data-url="/assistant/${longId}"]`).waitFor() },
  { name: "types", path: "/_electric/console/types", ready: (p) => p.locator('.type-card[data-type="assistant"]').waitFor() },
  { name: "entity", path: `/_electric/console/entities/assistant/${longId}`, ready: (p) => p.locator("#view[data-ready=true]").waitFor({ timeout: 10000 }) },
  { name: "not found", path: "/_electric/console/no/such/page", ready: (p) => p.getByRole("heading", { name: "Not found" }).waitFor() },
  { name: "no such entity", path: `/_electric/console/entities/assistant/no-such-${run}`,
    ready: (p) => p.getByRole("heading", { level: 1, name: "No such entity" }).waitFor({ timeout: 10000 }) },
  { name: "inspector", path: `/_electric/console/inspect?path=${encodeURIComponent(`/assistant/${longId}/main`)}`,
    ready: (p) => p.locator("#inspect-rows li").first().waitFor({ timeout: 10000 }) },
  { name: "palette", path: "/_electric/console/entities", ready: async (p) => {
    await p.locator(`tr[data-url="/assistant/${longId}"]`).waitFor()
    await p.keyboard.press("Control+K")
    await p.getByRole("dialog").getByRole("option").first().waitFor()
  } },
]

beforeAll(async () => {
  server = await startEntityd([]) // with the demo assistant
  url = server.url
  browser = await launchChromium()
  for (let i = 0; i < 3; i++) {
    const r = await call("PUT", `/_electric/entities/assistant/${i === 0 ? longId : `${longId}-${i}`}`, {
      tags: { "a-long-tag-key-for-layout": `a-long-tag-value-${i}-that-wraps-or-overflows`, team: "layout" } })
    expect(r.status).toBe(201)
  }
}, 30000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
})

describe("the console on a phone (390x844)", () => {
  it("no view overflows horizontally, and axe finds nothing serious in either theme", async () => {
    for (const scheme of ["light", "dark"]) {
      const page = await newPage({ viewport: PHONE, colorScheme: scheme, isMobile: true, hasTouch: true })
      for (const v of views()) {
        await page.goto(`${url}${v.path}`)
        await v.ready(page)
        expect(await background(page), `${v.name} ${scheme}`).toBe(scheme === "dark" ? DARK_BG : LIGHT_BG)
        expect(await overflow(page), `${v.name} ${scheme}: scrollWidth - innerWidth`).toBeLessThanOrEqual(0)
        expect(await axe(page), `${v.name} ${scheme}`).toEqual([])
        await screenshot(page, `phone-${v.name}-${scheme}`)
        if (v.name === "types") { // a type opened: its schemas and commands fit too
          await page.locator('.type-card[data-type="assistant"] summary').click()
          expect(await overflow(page), `open type card ${scheme}`).toBeLessThanOrEqual(0)
        }
      }
      expect(page.errors).toEqual([])
      await page.context().close()
    }
  }, 180000)

  it("the entity list is stacked cards and the spawn form opens above it", async () => {
    const page = await newPage({ viewport: PHONE, isMobile: true, hasTouch: true })
    await page.goto(`${url}/_electric/console/entities?tag=team%3Dlayout`)
    const row = page.locator(`tr[data-url="/assistant/${longId}"]`)
    await row.waitFor()
    // a row is a card as wide as the list, not a table row of cells side by side
    const [rowBox, listBox] = [await row.boundingBox(), await page.locator("table.entities").boundingBox()]
    expect(rowBox.width).toBeLessThanOrEqual(PHONE.width)
    expect(Math.abs(rowBox.width - listBox.width)).toBeLessThan(2)
    const link = await row.locator("a").boundingBox()
    const status = await row.locator(".badge").boundingBox()
    expect(status.y).toBeGreaterThan(link.y) // the status on the line under the id
    // folded until asked for, then above the list, with the focus in it
    const form = page.getByRole("form", { name: "Spawn an entity" })
    expect(await form.isVisible()).toBe(false)
    const open = page.getByRole("button", { name: "New entity" })
    expect(await open.getAttribute("aria-expanded")).toBe("false")
    await open.click()
    await form.waitFor()
    expect(await open.getAttribute("aria-expanded")).toBe("true")
    expect((await form.boundingBox()).y).toBeLessThan((await page.locator("table.entities").boundingBox()).y)
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("spawn-type")
    expect(await overflow(page)).toBeLessThanOrEqual(0)
    await screenshot(page, "phone-spawn-light")
    expect(page.errors).toEqual([])
    await page.context().close()
  })
})

describe("the console at 768 px (between the phone and the two-column layouts)", () => {
  it("no view overflows horizontally", async () => {
    const page = await newPage({ viewport: { width: 768, height: 1024 } })
    for (const v of views()) {
      await page.goto(`${url}${v.path}`)
      await v.ready(page)
      expect(await overflow(page), v.name).toBeLessThanOrEqual(0)
    }
    expect(page.errors).toEqual([])
    await page.context().close()
  })
})

describe("dark mode", () => {
  it("follows prefers-color-scheme, and the Theme control overrides it and is remembered", async () => {
    const page = await newPage()
    await page.emulateMedia({ colorScheme: "dark" })
    await page.goto(`${url}/_electric/console/entities`)
    const theme = page.getByLabel("Theme")
    await theme.waitFor()
    expect(await theme.inputValue()).toBe("system")
    expect(await background(page)).toBe(DARK_BG)
    await page.emulateMedia({ colorScheme: "light" })
    expect(await background(page)).toBe(LIGHT_BG)
    await page.emulateMedia({ colorScheme: "dark" })

    await theme.selectOption("light") // by keyboard: it is a labelled <select>
    expect(await background(page)).toBe(LIGHT_BG)
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe("light")
    await page.reload()
    await theme.waitFor()
    expect(await theme.inputValue()).toBe("light")
    expect(await background(page)).toBe(LIGHT_BG)

    await page.emulateMedia({ colorScheme: "light" })
    await theme.focus()
    await page.keyboard.press("End") // the last option, Dark, chosen from the keyboard
    await expect.poll(() => theme.inputValue()).toBe("dark")
    expect(await background(page)).toBe(DARK_BG)
    // remembered before the first render: the attribute is set when the page's script starts
    await page.reload()
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe("dark")
    expect(await background(page)).toBe(DARK_BG)

    await theme.selectOption("system")
    expect(await background(page)).toBe(LIGHT_BG)
    expect(await page.evaluate(() => localStorage.getItem("entityd.console.theme"))).toBe(null)
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("axe finds nothing serious on every view at 1280 px in either theme", async () => {
    for (const theme of ["light", "dark"]) {
      const page = await newPage()
      await page.addInitScript((t) => localStorage.setItem("entityd.console.theme", t), theme)
      for (const v of views()) {
        await page.goto(`${url}${v.path}`)
        await v.ready(page)
        expect(await background(page)).toBe(theme === "dark" ? DARK_BG : LIGHT_BG)
        expect(await axe(page), `${v.name} ${theme}`).toEqual([])
        await screenshot(page, `${v.name}-${theme}`)
        if (v.name === "entity") { // the composer's picker and a chip
          const box = page.getByRole("combobox", { name: "Message" })
          await box.click()
          await page.keyboard.type("/")
          await page.getByRole("listbox", { name: "Slash commands" }).waitFor()
          expect(await axe(page), `picker ${theme}`).toEqual([])
          await page.keyboard.press("Enter")
          await box.locator(".chip").waitFor()
          expect(await axe(page), `chip ${theme}`).toEqual([])
        }
      }
      // the spawn form's controls and the empty/no-match state's button
      await page.goto(`${url}/_electric/console/entities?type=none-${run}`)
      await page.getByRole("button", { name: "Clear filters" }).waitFor()
      expect(await axe(page), `no match ${theme}`).toEqual([])
      expect(page.errors).toEqual([])
      await page.context().close()
    }
  }, 180000)
})

// onEntitiesShape lets a test change the entity list's shape reads: change(u) may
// rewrite the shape URL u, or wait, before the read goes on. A catch-up read goes out
// from the page; a live one travels through the live feed, as a POST registering its
// path on the feed's session. Tabs share the feed through a SharedWorker, whose requests
// the page cannot route, so the page runs its own feed (as a browser without
// SharedWorker does) and both kinds are routed here.
async function onEntitiesShape(page, change) {
  const isEntities = (u) => u.pathname.endsWith("/v1/shape") && u.searchParams.get("table") === "entities"
  await page.addInitScript(() => Object.defineProperty(window, "SharedWorker", { value: undefined }))
  await page.route(isEntities, async (route) => {
    const u = new URL(route.request().url())
    await change(u)
    return route.continue({ url: u.toString() })
  })
  await page.route("**/_electric/feed/*/requests", async (route) => {
    const body = route.request().postDataJSON()
    const u = new URL(body.path, url)
    if (!isEntities(u)) return route.continue()
    await change(u)
    return route.continue({ postData: JSON.stringify({ ...body, path: u.pathname + u.search }) })
  })
}

describe("the entity list's states", () => {
  it("loading (no count), then no match with Clear filters", async () => {
    const page = await newPage()
    // hold the list's first answer until the loading state has been seen
    let release
    const held = new Promise((r) => { release = r })
    await onEntitiesShape(page, () => held)
    await page.goto(`${url}/_electric/console/entities?type=none-${run}`)
    await page.getByText("Loading entities…").waitFor()
    expect(await page.locator("#entity-count").textContent()).toBe("")
    expect(await page.locator("table.entities").isVisible()).toBe(false)
    release()
    const clearButton = page.getByRole("button", { name: "Clear filters" })
    await clearButton.waitFor()
    expect(await page.getByText("No entity matches these filters").isVisible()).toBe(true)
    expect(await page.locator("#entity-count").textContent()).toBe("(0)")
    expect(await page.getByText("Loading entities…").count()).toBe(0)
    await clearButton.click()
    await page.locator(`tr[data-url="/assistant/${longId}"]`).waitFor()
    expect(await page.getByLabel("Filters").getByLabel("Type").inputValue()).toBe("")
    expect(new URL(page.url()).search).toBe("")
    expect(await page.getByText("No entity matches these filters").count()).toBe(0)
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("empty: says so and points to the spawn form", async () => {
    const page = await newPage()
    // The suite's database is shared with other suites, so the list is made empty the
    // server's way: the list's shape requests ask for a url no entity has (the page adds
    // no filter of its own, so it shows its unfiltered empty state).
    await onEntitiesShape(page, (u) => {
      u.searchParams.set("where", "url = $1")
      u.searchParams.set("params[1]", `/none/${run}`)
    })
    await page.goto(`${url}/_electric/console/entities`)
    await page.getByText("No entities yet").waitFor()
    expect(await page.locator("#entity-count").textContent()).toBe("(0)")
    await page.getByRole("link", { name: "the spawn form" }).click()
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("spawn-type")
    expect(new URL(page.url()).pathname).toBe("/_electric/console/entities") // no navigation
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("errors in words", async () => {
    const page = await newPage()
    // the server's real 400: the list's shape asks for a column the table does not have
    await onEntitiesShape(page, (u) => u.searchParams.set("where", "no_such_column = 1"))
    await page.goto(`${url}/_electric/console/entities`)
    const alert = page.locator(".entities-view .errors .error-summary")
    await expect.poll(() => alert.count()).toBe(1)
    const text = await alert.textContent()
    expect(text).toMatch(/^The entity list could not be loaded: the server answered 400 \(.+\)\.$/)
    expect(text).not.toMatch(/HTTP Error|http:\/\//)
    expect(await page.getByText("Loading entities…").count()).toBe(0)
    await page.context().close()
  })
})

describe("the shell", () => {
  it("an unknown console path shows Not found with a way back", async () => {
    const page = await newPage()
    await page.goto(`${url}/_electric/console/no/such/page`)
    await page.getByRole("heading", { level: 1, name: "Not found" }).waitFor()
    expect(await page.title()).toBe("Not found · entityd console")
    expect(await page.locator("main code").textContent()).toBe("/_electric/console/no/such/page")
    await page.getByRole("link", { name: "Go to the entity list" }).click()
    await expect.poll(() => page.getByRole("heading", { level: 1 }).textContent()).toMatch(/^Entities/)
    expect(new URL(page.url()).pathname).toBe("/_electric/console/entities")
    expect(page.errors).toEqual([])
    await page.context().close()
  })

  it("counts the Tab presses from page load to the list's first entity link", async () => {
    const page = await newPage()
    await page.goto(`${url}/_electric/console/entities`)
    await page.locator("table.entities tbody a").first().waitFor()
    const firstLink = () => page.evaluate(() => document.activeElement === document.querySelector("table.entities tbody a"))
    let presses = 0
    while (!(await firstLink()) && presses < 30) {
      await page.keyboard.press("Tab")
      presses++
    }
    // skip link, Entities, Types, Theme, the three filters, the link (no Token button: a
    // dev-mode server never asks for one)
    expect(presses).toBe(9) // the skip link, Entities, Types, Jump to…, Theme, three filters, the link
    console.log(`Tab presses from load to the first entity link: ${presses}`)

    // the skip link lands on the heading; from there the filters and the list
    await page.reload()
    await page.locator("table.entities tbody a").first().waitFor()
    await page.keyboard.press("Tab")
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Skip to content")
    await page.keyboard.press("Enter")
    expect(await page.evaluate(() => document.activeElement?.tagName)).toBe("H1")
    let viaSkip = 2
    while (!(await firstLink()) && viaSkip < 30) {
      await page.keyboard.press("Tab")
      viaSkip++
    }
    expect(viaSkip).toBe(6) // Tab, Enter, then the three filters and the link
    console.log(`... with the skip link: ${viaSkip} key presses`)
    expect(page.errors).toEqual([])
    await page.context().close()
  })
})

describe("dates", () => {
  it("formatTime shows the date for times before today, the year when not this year", async () => {
    const page = await newPage()
    await page.goto(`${url}/_electric/console/no/such/page`)
    await page.evaluate(`${domSource};window.consoleDom=consoleDom;0`)
    const r = await page.evaluate(() => {
      const { formatTime } = window.consoleDom
      const now = new Date(2026, 10, 27, 15, 0, 0).getTime()
      return {
        today: formatTime(new Date(2026, 10, 27, 14, 3, 11).getTime(), now),
        midnight: formatTime(new Date(2026, 10, 27, 0, 0, 0).getTime(), now),
        yesterday: formatTime(new Date(2026, 10, 26, 23, 59, 59).getTime(), now),
        earlier: formatTime(new Date(2026, 0, 5, 9, 7, 1).toISOString(), now),
        lastYear: formatTime(new Date(2025, 10, 26, 14, 3, 11).getTime(), now),
        nextDayNow: formatTime(new Date(2026, 10, 27, 14, 3, 11).getTime(), new Date(2026, 10, 28, 8, 0, 0).getTime()),
        bad: formatTime("not a date", now),
        realNow: formatTime(Date.now()),
      }
    })
    expect(r).toMatchObject({ today: "14:03:11", midnight: "00:00:00", yesterday: "26 Nov 23:59:59", earlier: "5 Jan 09:07:01",
      lastYear: "26 Nov 2025 14:03:11", nextDayNow: "27 Nov 14:03:11", bad: "" })
    expect(r.realNow).toMatch(/^\d\d:\d\d:\d\d$/)
    // the list's Created cell is a <time> with the instant
    await page.goto(`${url}/_electric/console/entities`)
    const time = page.locator(`tr[data-url="/assistant/${longId}"] time`)
    await time.waitFor()
    const iso = await time.getAttribute("datetime")
    expect(new Date(iso).toISOString()).toBe(iso)
    expect(await time.getAttribute("title")).toBe(iso)
    expect(await time.textContent()).toMatch(/^\d\d:\d\d:\d\d$/) // spawned today
    await page.context().close()
  })
})
