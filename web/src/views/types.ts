// Entity types, live from the `entity_types` shape: their schemas and static commands,
// and registering or updating one from JSON with the server's error details inline.

import { h, clear, keepFocus } from "../dom"
import { api } from "../http"
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
  const form = h("form", { class: "panel register", "aria-labelledby": "register-title", onsubmit: (e: Event) => { e.preventDefault(); void register() } },
    h("h2", { id: "register-title" }, "Register or update a type"),
    h("p", { class: "muted" }, "The definition as JSON. Registering an existing name replaces it and bumps its revision."),
    h("label", { for: "type-json" }, "Type definition (JSON)"),
    editor, result, done,
    h("button", { type: "submit", class: "primary" }, "Register"))
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

  async function register(): Promise<void> {
    showError(result, null)
    done.textContent = ""
    let def: unknown
    try {
      def = JSON.parse(editor.value)
    } catch (err) {
      showError(result, new Error(`Not JSON: ${(err as Error).message}`))
      return
    }
    try {
      const t = await api("POST", "/_electric/entity-types", def)
      done.textContent = `Registered ${t.name}, revision ${t.revision}.`
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

function schema(title: string, v: unknown): Node | null {
  if (v === null || v === undefined) return null
  return h("div", {}, h("h3", {}, title), h("pre", { class: "schema" }, JSON.stringify(v, null, 2)))
}
