// The entityd console: entry point. A header with the views and the token, and one
// view at a time in <main>; leaving a view stops everything it follows.

import { storedTheme, setTheme, onThemeChange, THEMES, type Theme } from "./theme" // first: the theme before anything renders
import { h, clear } from "./dom"
import { setToken, token, whenUnauthorized } from "./http"
import { onConnectionChange } from "./connection"
import { BASE, currentRoute, startRouter } from "./router"
import { entitiesView } from "./views/entities"
import { entityView } from "./views/entity"
import { typesView } from "./views/types"
import { inspectorView } from "./views/inspector"
import { installPalette, paletteButton } from "./palette"
import type { Stop } from "./live"

let stopView: Stop | null = null

function shell(): HTMLElement {
  const dialog = tokenDialog()
  // The Token button shows once the server has asked for a token (or one is set): a dev
  // mode server never does, and the header keeps one control fewer before the content.
  const tokenButton = h("button", { type: "button", id: "token-button", hidden: !token(), onclick: () => dialog.showModal() }, token() ? "Token set" : "Token")
  // Few stops before the content: the brand is not a link (Entities is).
  const header = h("header", { class: "top" },
    h("span", { class: "brand" }, "entityd console"),
    h("nav", { "aria-label": "Views" },
      h("a", { href: `${BASE}/entities`, "data-link": "", id: "nav-entities" }, "Entities"),
      h("a", { href: `${BASE}/types`, "data-link": "", id: "nav-types" }, "Types")),
    h("div", { class: "tools" }, paletteButton(), h("label", { for: "theme-select" }, "Theme"), themeSelect(), tokenButton))
  const main = h("main", { id: "view" })
  const offline = h("div", { class: "offline", role: "status", hidden: true }, "The server cannot be reached. Retrying; what you see is as of the last update.")
  onConnectionChange((online) => {
    offline.hidden = online
  })
  // The skip link moves the focus to the view's heading itself: following "#view" would
  // be a history entry, which the router takes for a navigation.
  const skip = h("a", { href: "#view", class: "skip", onclick: (e: MouseEvent) => {
    e.preventDefault()
    focusHeading(main)
  } }, "Skip to content")
  document.body.append(skip, header, offline, main, dialog,
    h("div", { id: "announcer", class: "visually-hidden", "aria-live": "polite" }))
  whenUnauthorized(() => {
    tokenButton.hidden = false
    if (!dialog.open) dialog.showModal()
  })
  return main
}

/** themeSelect is the header's System / Light / Dark choice (remembered, see theme.ts). */
function themeSelect(): HTMLSelectElement {
  const labels: Record<Theme, string> = { system: "System", light: "Light", dark: "Dark" }
  const select = h("select", { id: "theme-select", onchange: () => setTheme(select.value as Theme) },
    THEMES.map((t) => h("option", { value: t }, labels[t])))
  select.value = storedTheme()
  onThemeChange((t) => {
    select.value = t
  })
  return select
}

function focusHeading(root: HTMLElement): void {
  const heading = root.querySelector("h1")
  if (heading instanceof HTMLElement) {
    heading.tabIndex = -1
    heading.focus()
  }
}

/** notFound is the page for a console path that names no view, with the ways back. */
function notFound(root: HTMLElement, path: string): void {
  clear(root)
  root.appendChild(h("div", { class: "not-found" },
    h("h1", {}, "Not found"),
    h("p", {}, "The console has no page at ", h("code", {}, BASE + path), "."),
    h("p", {}, h("a", { href: `${BASE}/entities`, "data-link": "" }, "Go to the entity list"), " or ",
      h("a", { href: `${BASE}/types`, "data-link": "" }, "the entity types"), ".")))
  root.setAttribute("data-ready", "true")
}

/** tokenDialog asks for a bearer token (jwt mode). It is kept for this tab only. */
function tokenDialog(): HTMLDialogElement {
  const input = h("input", { id: "token-input", type: "password", autocomplete: "off" })
  const dialog = h("dialog", { "aria-labelledby": "token-title" },
    h("form", { method: "dialog" },
      h("h2", { id: "token-title" }, "Bearer token"),
      h("p", {}, "This server wants a token (jwt mode). It is kept in this tab only and sent with every request."),
      h("label", { for: "token-input" }, "Token"), input,
      h("div", { class: "row" },
        h("button", { value: "save", class: "primary" }, "Use this token"),
        h("button", { value: "clear" }, "Clear"),
        h("button", { value: "cancel" }, "Cancel"))))
  dialog.addEventListener("close", () => {
    if (dialog.returnValue === "save" && input.value.trim()) setToken(input.value.trim())
    else if (dialog.returnValue === "clear") setToken(null)
    else return
    input.value = ""
    const b = document.getElementById("token-button")
    if (b) b.textContent = token() ? "Token set" : "Token"
    render() // follow everything again with the new credentials
  })
  return dialog
}

let main: HTMLElement
let rendered = false

function render(): void {
  stopView?.()
  stopView = null
  main.removeAttribute("data-ready")
  const r = currentRoute()
  for (const id of ["nav-entities", "nav-types"]) document.getElementById(id)?.removeAttribute("aria-current")
  switch (r.view) {
    case "entities":
      document.title = "Entities · entityd console"
      document.getElementById("nav-entities")?.setAttribute("aria-current", "page")
      stopView = entitiesView(main, r.query)
      break
    case "types":
      document.title = "Types · entityd console"
      document.getElementById("nav-types")?.setAttribute("aria-current", "page")
      stopView = typesView(main)
      break
    case "inspect":
      document.title = `Inspect ${r.query.get("path") ?? ""} · entityd console`
      stopView = inspectorView(main, r.query)
      break
    case "entity":
      document.title = `/${r.type}/${r.id} · entityd console`
      stopView = entityView(main, r.type, r.id)
      break
    default:
      document.title = "Not found · entityd console"
      notFound(main, r.path)
  }
  // After a navigation inside the console the focus goes to the new view's heading (the
  // link that had it is gone), which also tells a screen reader where it is.
  if (rendered) focusHeading(main)
  rendered = true
}

main = shell()
installPalette()
startRouter(render)
