// The Ctrl+K (⌘K) palette: a dialog with a search box over the console's views, the entity
// types and the entities, live from the same shapes the views follow (only while it is
// open). Arrow keys move, Enter jumps, Escape closes; the box is a combobox over a listbox,
// as the composer's picker is.

import { h, clear } from "./dom"
import { followShape, type Stop } from "./live"
import { BASE, navigate } from "./router"

type Item = { label: string; kind: string; detail?: string; href: string }
const MAX_ITEMS = 50

let dialog: HTMLDialogElement | null = null

export const isMac = () => /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent)

/** paletteButton is the header's hint; installPalette makes Ctrl+K / ⌘K open the palette. */
export function paletteButton(): HTMLButtonElement {
  const key = isMac() ? "⌘K" : "Ctrl K"
  return h("button", { type: "button", id: "palette-button", class: "palette-hint", "aria-keyshortcuts": "Control+K Meta+K", onclick: () => openPalette() },
    "Jump to… ", h("kbd", {}, key))
}

export function installPalette(): void {
  document.addEventListener("keydown", (e) => {
    if ((e.ctrlKey || e.metaKey) && !e.altKey && !e.shiftKey && e.key.toLowerCase() === "k") {
      e.preventDefault()
      openPalette()
    }
  })
}

export function openPalette(): void {
  if (dialog?.open) {
    dialog.querySelector("input")?.focus()
    return
  }
  const input = h("input", {
    id: "palette-input", type: "text", role: "combobox", autocomplete: "off", spellcheck: "false",
    "aria-autocomplete": "list", "aria-expanded": "true", "aria-controls": "palette-list", "aria-labelledby": "palette-title",
    placeholder: "Entity, type or view",
  })
  const list = h("ul", { id: "palette-list", role: "listbox", "aria-label": "Results", class: "palette-list" })
  const count = h("p", { class: "muted palette-count", "aria-live": "polite" })
  const d = h("dialog", { class: "palette", "aria-labelledby": "palette-title" },
    h("h2", { id: "palette-title" }, "Jump to"),
    input, count, list,
    h("p", { class: "muted palette-keys" }, "↑ ↓ to move, Enter to open, Esc to close"))
  dialog = d
  document.body.appendChild(d)

  const views: Item[] = [
    { label: "Entities", kind: "view", href: `${BASE}/entities` },
    { label: "Types", kind: "view", href: `${BASE}/types` },
  ]
  let types: Item[] = []
  let entities: Item[] = []
  let shown: Item[] = []
  let active = 0
  let loaded = 0

  const render = () => {
    const q = input.value.trim().toLowerCase()
    const all = [...views, ...types, ...entities]
    const match = q ? all.filter((i) => i.label.toLowerCase().includes(q) || (i.detail ?? "").toLowerCase().includes(q)) : all
    // the ones that start with what is typed first
    if (q) match.sort((a, b) => Number(!a.label.toLowerCase().startsWith(q)) - Number(!b.label.toLowerCase().startsWith(q)))
    shown = match.slice(0, MAX_ITEMS)
    if (active >= shown.length) active = Math.max(0, shown.length - 1)
    clear(list)
    shown.forEach((it, i) => {
      list.appendChild(h("li", {
        id: `palette-opt-${i}`, role: "option", class: "option", "aria-selected": String(i === active),
        onmousedown: (e: Event) => e.preventDefault(), onclick: () => go(it),
      }, h("span", { class: "palette-kind" }, it.kind), " ", h("span", { class: "palette-label" }, it.label),
      it.detail ? h("span", { class: "muted palette-detail" }, " " + it.detail) : null))
    })
    if (shown.length) input.setAttribute("aria-activedescendant", `palette-opt-${active}`)
    else input.removeAttribute("aria-activedescendant")
    count.textContent = shown.length === 0
      ? (loaded < 2 ? "Loading…" : `Nothing matches “${input.value.trim()}”.`)
      : `${match.length} result${match.length === 1 ? "" : "s"}${match.length > MAX_ITEMS ? `, the first ${MAX_ITEMS} shown` : ""}`
    document.getElementById(`palette-opt-${active}`)?.scrollIntoView({ block: "nearest" })
  }

  const stops: Stop[] = [
    followShape({ table: "entity_types", columns: ["name", "description"] }, (rows) => {
      types = (rows as any[]).map((t) => ({ label: t.name, kind: "type", detail: t.description ?? "", href: `${BASE}/entities?type=${encodeURIComponent(t.name)}` }))
        .sort((a, b) => (a.label < b.label ? -1 : 1))
      loaded |= 1
      render()
    }, () => {}),
    followShape({ table: "entities", columns: ["url", "type", "status"] }, (rows) => {
      entities = (rows as any[]).map((r) => {
        const [, type, id] = /^\/([^/]+)\/(.+)$/.exec(r.url) ?? []
        return { label: r.url, kind: "entity", detail: r.status, href: `${BASE}/entities/${type}/${id}` }
      }).sort((a, b) => (a.label < b.label ? -1 : 1))
      loaded |= 2
      render()
    }, () => {}),
  ]

  const close = () => d.close()
  const go = (it: Item) => {
    close()
    navigate(it.href)
  }
  input.addEventListener("input", () => {
    active = 0
    render()
  })
  input.addEventListener("keydown", (e) => {
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault()
      if (!shown.length) return
      active = (active + (e.key === "ArrowDown" ? 1 : -1) + shown.length) % shown.length
      render()
    } else if (e.key === "Enter") {
      e.preventDefault()
      if (shown[active]) go(shown[active])
    }
  })
  d.addEventListener("close", () => {
    for (const s of stops) s()
    d.remove()
    if (dialog === d) dialog = null
  })
  d.addEventListener("click", (e) => {
    if (e.target === d) close() // a click on the backdrop
  })
  render()
  d.showModal()
  input.focus()
}
