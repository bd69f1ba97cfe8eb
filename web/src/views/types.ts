// Entity types, live from the `entity_types` shape: their schemas and static commands,
// and registering or updating one from JSON with the server's error details inline.

import { h, clear, keepFocus } from "../dom"
import { api, ApiError } from "../http"
import { curlButton } from "../curl"
import { followShape, type Stop } from "../live"
import { argumentHint } from "../composer/commands"
import { errorBox, showError } from "./errors"

const EXAMPLE = {
  name: "notebook",
  description: "Keeps notes",
  creation_schema: { type: "object", properties: { owner: { type: "string" } }, required: ["owner"] },
  inbox_schemas: { note: { type: "object", properties: { text: { type: "string", minLength: 1 } }, required: ["text"] } },
  slash_commands: [
    { name: "summarize", description: "Summarize the notes" },
    { name: "search", description: "Find notes", arguments: [{ name: "query", type: "string", required: true }] },
  ],
}

const DEFINITION_KEYS = ["name", "description", "creation_schema", "inbox_schemas", "state_schemas", "slash_commands",
  "serve_endpoint", "default_dispatch_policy"]

export function typesView(root: HTMLElement): Stop {
  const list = h("div", { class: "type-list" })
  const listErrors = errorBox()
  const editor = h("textarea", { id: "type-json", rows: 18, spellcheck: "false" }, JSON.stringify(EXAMPLE, null, 2))
  const result = errorBox()
  const done = h("p", { class: "ok", role: "status" })
  // after a registration: straight on to spawning one
  const next = h("p", { class: "register-next", hidden: true })
  // registering a name that exists asks first, in the page
  const confirmBox = h("div", { class: "register-confirm", role: "group", "aria-labelledby": "register-confirm-text", hidden: true })
  const parsed = (): unknown => {
    try {
      return JSON.parse(editor.value)
    } catch (err) {
      showError(result, new Error(`Not JSON: ${(err as Error).message}`))
      return undefined
    }
  }
  const form = h("form", { class: "panel register", "aria-labelledby": "register-title", onsubmit: (e: Event) => { e.preventDefault(); void register() } },
    h("h2", { id: "register-title" }, "Register or update a type"),
    h("p", { class: "muted" }, "The definition as JSON. Registering an existing name replaces it and bumps its revision."),
    h("label", { for: "type-json" }, "Type definition (JSON)"),
    editor, result, done, next, confirmBox,
    h("div", { class: "row" },
      h("button", { type: "submit", class: "primary" }, "Register"),
      curlButton(() => {
        const def = parsed()
        return def === undefined ? null : { method: "POST", path: "/_electric/entity-types", body: def }
      })))
  editor.addEventListener("input", () => (confirmBox.hidden = true))
  clear(root)
  root.appendChild(h("div", { class: "types-view" },
    h("h1", {}, "Entity types"),
    h("div", { class: "types-layout" }, h("section", { class: "panel", "aria-label": "Types" }, listErrors, list), form)))

  const open = new Set<string>()
  const stop = followShape({ table: "entity_types" }, (rows) => {
    showError(listErrors, null)
    const sorted = (rows as any[]).slice().sort((a, b) => (a.name < b.name ? -1 : 1))
    keepFocus(list, "data-type", () => {
      clear(list)
      if (sorted.length === 0) list.appendChild(h("p", { class: "muted" }, "No types yet."))
      for (const t of sorted) list.appendChild(typeCard(t, open, (def) => {
        editor.value = JSON.stringify(def, null, 2)
        editor.focus()
      }))
    })
  }, (err) => showError(listErrors, err))

  async function register(confirmed = false): Promise<void> {
    showError(result, null)
    done.textContent = ""
    next.hidden = true
    confirmBox.hidden = true
    const def = parsed() as any
    if (def === undefined) return
    const name = def && typeof def === "object" && typeof def.name === "string" ? def.name : ""
    if (name && !confirmed) {
      // an existing name: say what registering does and let the user choose
      let existing: any = null
      try {
        existing = await api("GET", `/_electric/entity-types/${encodeURIComponent(name)}`)
      } catch (err) {
        if (!(err instanceof ApiError && err.status === 404)) {
          showError(result, err)
          return
        }
      }
      if (existing) {
        const rev = Number(existing.revision)
        clear(confirmBox)
        confirmBox.append(
          h("p", { id: "register-confirm-text" }, `${name} exists at revision ${rev}; registering makes revision ${rev + 1}.`),
          h("div", { class: "row" },
            h("button", { type: "button", class: "primary", onclick: () => void register(true) }, "Update"),
            h("button", { type: "button", onclick: () => { confirmBox.hidden = true; editor.focus() } }, "Cancel")))
        confirmBox.hidden = false
        ;(confirmBox.querySelector("button") as HTMLButtonElement).focus()
        return
      }
    }
    try {
      const t = await api("POST", "/_electric/entity-types", def)
      done.textContent = `Registered ${t.name}, revision ${t.revision}.`
      clear(next)
      next.appendChild(spawnLink(t.name))
      next.hidden = false
    } catch (err) {
      showError(result, err)
    }
  }
  return stop
}

function typeCard(t: any, open: Set<string>, edit: (def: unknown) => void): HTMLElement {
  const cmds: any[] = Array.isArray(t.slash_commands) ? t.slash_commands : []
  const det = h("details", { class: "type-card", "data-type": t.name },
    h("summary", {}, h("strong", {}, t.name), " ", h("span", { class: "muted" }, `rev ${t.revision ?? "?"}`), t.description ? " — " + t.description : ""),
    h("div", { class: "row" },
      h("a", { href: `/_electric/console/entities?type=${encodeURIComponent(t.name)}&spawn=${encodeURIComponent(t.name)}`, "data-link": "" }, "Entities and spawn"),
      spawnLink(t.name),
      h("button", { type: "button", onclick: () => edit(Object.fromEntries(DEFINITION_KEYS.filter((k) => t[k] !== null && t[k] !== undefined).map((k) => [k, t[k]]))) }, "Edit")),
    h("h3", {}, "Static commands"),
    cmds.length === 0 ? h("p", { class: "muted" }, "None.") :
      h("ul", { class: "static-commands" }, cmds.map((c) => h("li", {}, h("code", {}, `/${c.name} ${argumentHint(c)}`.trim()), c.description ? " — " + c.description : ""))),
    schema("Creation schema", t.creation_schema),
    schema("Inbox schemas", t.inbox_schemas),
    schema("State schemas", t.state_schemas))
  det.open = open.has(t.name)
  det.addEventListener("toggle", () => (det.open ? open.add(t.name) : open.delete(t.name)))
  return det
}

function spawnLink(name: string): HTMLAnchorElement {
  return h("a", { href: `/_electric/console/entities?spawn=${encodeURIComponent(name)}`, "data-link": "", class: "spawn-link" }, `Spawn a ${name}`)
}

function schema(title: string, v: unknown): Node | null {
  if (v === null || v === undefined) return null
  return h("div", {}, h("h3", {}, title), h("pre", { class: "schema" }, JSON.stringify(v, null, 2)))
}
