// The entity list, live from the `entities` shape (spawns, kills, status and tag changes
// show without a reload), with filters, and the spawn form.

import { h, clear, formatTime, keepFocus } from "../dom"
import { api, entityPath } from "../http"
import { followShape, type Stop } from "../live"
import { argsForm, type ArgsForm } from "./schemaform"
import { errorBox, showError } from "./errors"
import { navigate } from "../router"
import { curlButton } from "../curl"

const STATUSES = ["", "spawning", "idle", "running", "paused", "stopping", "stopped", "killed"]
// The list renders at most this many rows (the newest); filters narrow it.
const MAX_ROWS = 500

export function entitiesView(root: HTMLElement, query: URLSearchParams): Stop {
  const stops: Stop[] = []
  let stopList: Stop | null = null
  let types: any[] = []
  let rows: any[] = []

  const typeFilter = h("select", { id: "filter-type" }, h("option", { value: "" }, "any type"))
  const statusFilter = h("select", { id: "filter-status" }, STATUSES.map((s) => h("option", { value: s }, s || "any status")))
  const tagFilter = h("input", { id: "filter-tag", type: "text", placeholder: "key=value" })
  // The type asked for (the URL's ?type=) is kept apart from the select, which has no
  // options until the types arrive.
  let wantedType = query.get("type") ?? ""
  statusFilter.value = query.get("status") ?? ""
  tagFilter.value = query.get("tag") ?? ""
  const listErrors = errorBox()
  const body = h("tbody", {})
  const count = h("span", { class: "muted", id: "entity-count" })
  const more = h("p", { class: "muted", role: "status" })

  const spawnType = h("select", { id: "spawn-type", required: true })
  const spawnId = h("input", { id: "spawn-id", type: "text", placeholder: "generated when empty", pattern: "[^/]+" })
  const spawnTags = h("textarea", { id: "spawn-tags", rows: 2, placeholder: "key=value, one per line", spellcheck: "false" })
  const argsSlot = h("div", {})
  const spawnErrors = errorBox()
  let args: ArgsForm = argsForm(null, "spawn-arg")
  // Enabled once the types are known (they come from a shape).
  const spawnButton = h("button", { type: "submit", class: "primary", disabled: true }, "Spawn")
  const spawnForm = h("form", { class: "panel spawn", "aria-labelledby": "spawn-title", onsubmit: (e: Event) => { e.preventDefault(); void spawn() } },
    h("h2", { id: "spawn-title" }, "Spawn an entity"),
    h("div", { class: "field" }, h("label", { for: "spawn-type" }, "Type"), spawnType),
    h("div", { class: "field" }, h("label", { for: "spawn-id" }, "Id"), spawnId),
    argsSlot,
    h("div", { class: "field" }, h("label", { for: "spawn-tags" }, "Tags"), spawnTags),
    spawnErrors,
    h("div", { class: "row" }, spawnButton, curlButton(() => {
      try {
        const c = spawnCall()
        return { method: "PUT", path: entityPath(c.type, c.id), body: c.body }
      } catch (err) {
        showError(spawnErrors, err)
        return null
      }
    })))

  clear(root)
  root.appendChild(h("div", { class: "entities-view" },
    h("h1", {}, "Entities ", count),
    h("div", { class: "entities-layout" },
      h("section", { class: "panel", "aria-labelledby": "list-title" },
        h("h2", { id: "list-title", class: "visually-hidden" }, "Entity list"),
        h("div", { class: "row filters", role: "group", "aria-label": "Filters" },
          h("label", { for: "filter-type" }, "Type"), typeFilter,
          h("label", { for: "filter-status" }, "Status"), statusFilter,
          h("label", { for: "filter-tag" }, "Tag"), tagFilter),
        listErrors,
        h("table", { class: "entities" },
          h("thead", {}, h("tr", {}, ["Entity", "Type", "Status", "Tags", "Created"].map((c) => h("th", { scope: "col" }, c)))),
          body),
        more),
      spawnForm)))

  let argsFor = ""
  const renderArgs = () => {
    const t = types.find((x) => x.name === spawnType.value)
    // a change to another type leaves the fields being filled in alone
    const key = `${spawnType.value}\u0000${JSON.stringify(t?.creation_schema ?? null)}`
    if (key === argsFor) return
    argsFor = key
    args = argsForm(t?.creation_schema ?? null, "spawn-arg")
    clear(argsSlot)
    argsSlot.appendChild(args.el)
  }
  spawnType.addEventListener("change", renderArgs)

  const tagMatch = (tags: any): boolean => {
    const f = tagFilter.value.trim()
    if (!f) return true
    const [k, ...rest] = f.split("=")
    const v = rest.join("=")
    const have = tags && typeof tags === "object" ? tags[k.trim()] : undefined
    return rest.length === 0 ? have !== undefined : have !== undefined && String(have) === v.trim()
  }

  const render = () => {
    const matching = rows.filter((r) => tagMatch(r.tags)).sort((a, b) => Number(b.created_at) - Number(a.created_at))
    const shown = matching.slice(0, MAX_ROWS)
    count.textContent = `(${matching.length})`
    more.textContent = matching.length > MAX_ROWS ? `Showing the newest ${MAX_ROWS} of ${matching.length}; filter to narrow the list.` : ""
    const frag = document.createDocumentFragment()
    for (const r of shown) {
      const [, type, id] = /^\/([^/]+)\/(.+)$/.exec(r.url) ?? []
      const tags = r.tags && typeof r.tags === "object" ? Object.entries(r.tags) : []
      frag.appendChild(h("tr", { "data-url": r.url },
        h("td", {}, h("a", { href: `/_electric/console/entities/${type}/${id}`, "data-link": "" }, r.url)),
        h("td", {}, r.type),
        h("td", {}, h("span", { class: `badge st-${r.status}` }, r.status)),
        h("td", {}, tags.map(([k, v]) => h("span", { class: "tag" }, `${k}: ${String(v)}`))),
        h("td", {}, formatTime(Number(r.created_at)))))
    }
    keepFocus(body, "data-url", () => {
      clear(body)
      body.appendChild(frag)
    })
  }

  const follow = () => {
    stopList?.()
    const conds: string[] = []
    const params: string[] = []
    if (wantedType) {
      params.push(wantedType)
      conds.push(`type = $${params.length}`)
    }
    if (statusFilter.value) {
      params.push(statusFilter.value)
      conds.push(`status = $${params.length}`)
    }
    const q = new URLSearchParams()
    if (wantedType) q.set("type", wantedType)
    if (statusFilter.value) q.set("status", statusFilter.value)
    if (tagFilter.value) q.set("tag", tagFilter.value)
    history.replaceState(null, "", `${location.pathname}${q.size ? "?" + q : ""}`)
    rows = []
    render()
    stopList = followShape({ table: "entities", where: conds.join(" AND ") || undefined, params: params.length ? params : undefined,
      columns: ["url", "type", "status", "tags", "created_at"] },
    (r) => {
      showError(listErrors, null)
      rows = r as any[]
      render()
    }, (err) => showError(listErrors, err))
  }
  typeFilter.addEventListener("change", () => {
    wantedType = typeFilter.value
    follow()
  })
  statusFilter.addEventListener("change", follow)
  tagFilter.addEventListener("input", () => {
    render()
    const q = new URLSearchParams(location.search)
    if (tagFilter.value) q.set("tag", tagFilter.value)
    else q.delete("tag")
    history.replaceState(null, "", `${location.pathname}${q.size ? "?" + q : ""}`)
  })
  follow()

  stops.push(followShape({ table: "entity_types", columns: ["name", "creation_schema"] }, (r) => {
    types = (r as any[]).slice().sort((a, b) => (a.name < b.name ? -1 : 1))
    const keepSpawn = spawnType.value || query.get("spawn") || ""
    clear(typeFilter)
    typeFilter.appendChild(h("option", { value: "" }, "any type"))
    clear(spawnType)
    for (const t of types) {
      typeFilter.appendChild(h("option", { value: t.name }, t.name))
      spawnType.appendChild(h("option", { value: t.name }, t.name))
    }
    if (wantedType && !types.some((t) => t.name === wantedType)) typeFilter.appendChild(h("option", { value: wantedType }, wantedType))
    typeFilter.value = wantedType
    if (types.some((t) => t.name === keepSpawn)) spawnType.value = keepSpawn
    spawnButton.disabled = types.length === 0
    renderArgs()
  }, (err) => showError(listErrors, err)))

  // the spawn the form holds now (an empty id is generated, and then kept in the form
  // so that a copied curl and a click spawn the same entity); throws on a bad field
  function spawnCall(): { type: string; id: string; body: Record<string, unknown> } {
    const type = spawnType.value
    if (!spawnId.value.trim()) spawnId.value = `${type}-${Date.now().toString(36)}`
    const id = spawnId.value.trim()
    const body: Record<string, unknown> = {}
    const a = args.value()
    if (a !== undefined) body.args = a
    const tags: Record<string, string> = {}
    for (const line of spawnTags.value.split("\n")) {
      if (!line.trim()) continue
      const i = line.indexOf("=")
      if (i <= 0) throw new Error(`Tag "${line}" is not key=value`)
      tags[line.slice(0, i).trim()] = line.slice(i + 1).trim()
    }
    if (Object.keys(tags).length > 0) body.tags = tags
    return { type, id, body }
  }

  async function spawn(): Promise<void> {
    showError(spawnErrors, null)
    let c: ReturnType<typeof spawnCall>
    try {
      c = spawnCall()
    } catch (err) {
      showError(spawnErrors, err)
      return
    }
    try {
      await api("PUT", entityPath(c.type, c.id), c.body)
      navigate(`/_electric/console/entities/${encodeURIComponent(c.type)}/${encodeURIComponent(c.id)}`)
    } catch (err) {
      showError(spawnErrors, err)
    }
  }

  return () => {
    stopList?.()
    for (const s of stops) s()
  }
}
