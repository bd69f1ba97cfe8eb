// The entity list, live from the `entities` shape (spawns, kills, status and tag changes
// show without a reload), with filters, and the spawn form.

import { h, clear, timeEl, keepFocus } from "../dom"
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
  // The type asked for (the URL's ?type=) is kept apart from the select, whose options
  // come with the types; until then the select shows it alone, so that a list already
  // filtered by it never reads "any type".
  let wantedType = query.get("type") ?? ""
  if (wantedType) {
    typeFilter.appendChild(h("option", { value: wantedType }, wantedType))
    typeFilter.value = wantedType
  }
  statusFilter.value = query.get("status") ?? ""
  tagFilter.value = query.get("tag") ?? ""
  const listErrors = errorBox()
  const body = h("tbody", {})
  const count = h("span", { class: "muted", id: "entity-count" })
  const more = h("p", { class: "muted", role: "status" })
  // What the list is when it has no rows: loading, empty, no match (filled by render).
  const state = h("div", { class: "state", role: "status" })
  const table = h("table", { class: "entities" },
    h("thead", {}, h("tr", {}, ["Entity", "Type", "Status", "Tags", "Created"].map((c) => h("th", { scope: "col" }, c)))),
    body)
  let loaded = false // the list shape has answered since the last follow()
  // it failed: the client stops on a 4xx (until the next follow()), and Electric's Shape
  // then still calls back with its rows so far, which must not read as "no entities"
  let failed = false

  const spawnType = h("select", { id: "spawn-type", required: true })
  const spawnId = h("input", { id: "spawn-id", type: "text", placeholder: "generated when empty", pattern: "[^/]+" })
  const spawnTags = h("textarea", { id: "spawn-tags", rows: 2, placeholder: "key=value, one per line", spellcheck: "false" })
  const argsSlot = h("div", {})
  const spawnErrors = errorBox()
  let args: ArgsForm = argsForm(null, "spawn-arg")
  // Enabled once the types are known (they come from a shape).
  const spawnButton = h("button", { type: "submit", class: "primary", disabled: true }, "Spawn")
  // Below 900px the form sits above the list, folded until "New entity" opens it (a
  // link with ?spawn=<type> opens it at once); wider, it is always shown beside the list.
  const spawnOpen = h("button", { type: "button", class: "spawn-open", "aria-controls": "spawn-form",
    "aria-expanded": query.get("spawn") ? "true" : "false", onclick: () => openSpawn(spawnOpen.getAttribute("aria-expanded") !== "true") }, "New entity")
  const spawnForm = h("form", { id: "spawn-form", class: query.get("spawn") ? "panel spawn" : "panel spawn collapsed", "aria-labelledby": "spawn-title", onsubmit: (e: Event) => { e.preventDefault(); void spawn() } },
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
    h("div", { class: "view-head" }, h("h1", {}, "Entities ", count), spawnOpen),
    h("div", { class: "entities-layout" },
      h("section", { class: "panel", "aria-labelledby": "list-title" },
        h("h2", { id: "list-title", class: "visually-hidden" }, "Entity list"),
        h("div", { class: "row filters", role: "group", "aria-label": "Filters" },
          h("label", { for: "filter-type" }, "Type"), typeFilter,
          h("label", { for: "filter-status" }, "Status"), statusFilter,
          h("label", { for: "filter-tag" }, "Tag"), tagFilter),
        listErrors,
        table,
        state,
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

  function openSpawn(open: boolean): void {
    spawnOpen.setAttribute("aria-expanded", String(open))
    spawnForm.classList.toggle("collapsed", !open)
    if (open) spawnType.focus()
  }

  const filtered = () => Boolean(wantedType || statusFilter.value || tagFilter.value.trim())
  const clearFilters = () => {
    wantedType = ""
    typeFilter.value = ""
    statusFilter.value = ""
    tagFilter.value = ""
    follow()
    typeFilter.focus()
  }

  const renderState = (n: number) => {
    clear(state)
    table.hidden = !loaded || failed || n === 0
    if (failed) return // the error box says it
    if (!loaded) state.append(h("p", {}, "Loading entities…"))
    else if (n > 0) return
    else if (filtered()) {
      state.append(h("p", { class: "state-title" }, "No entity matches these filters"),
        h("button", { type: "button", onclick: clearFilters }, "Clear filters"))
    } else {
      state.append(h("p", { class: "state-title" }, "No entities yet"),
        h("p", {}, "Spawn one of a registered type with ",
          h("a", { href: "#spawn-form", onclick: (e: MouseEvent) => { e.preventDefault(); openSpawn(true) } }, "the spawn form"), "."))
    }
  }

  const render = () => {
    const matching = rows.filter((r) => tagMatch(r.tags)).sort((a, b) => Number(b.created_at) - Number(a.created_at))
    const shown = matching.slice(0, MAX_ROWS)
    count.textContent = loaded && !failed ? `(${matching.length})` : ""
    renderState(matching.length)
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
        h("td", {}, timeEl(Number(r.created_at)))))
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
    loaded = false
    failed = false
    render()
    stopList = followShape({ table: "entities", where: conds.join(" AND ") || undefined, params: params.length ? params : undefined,
      columns: ["url", "type", "status", "tags", "created_at"] },
    (r) => {
      if (failed) return
      showError(listErrors, null)
      rows = r as any[]
      loaded = true
      render()
    }, (err) => {
      failed = true
      showError(listErrors, inWords("The entity list could not be loaded", err))
      render()
    })
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
  }, (err) => showError(listErrors, inWords("The entity types could not be loaded", err))))

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

/** inWords says what a live list's failure means, instead of the client's
 * "HTTP Error 404 at <url>: <json>". */
function inWords(what: string, err: unknown): Error {
  const e = err as { status?: unknown; json?: any; message?: string }
  const status = typeof e?.status === "number" ? e.status : undefined
  if (status === 401 || status === 403) return new Error(`${what}: the server refused this tab's credentials (${status}). Set a token with the Token button.`)
  if (status !== undefined) {
    const msg = e.json?.error?.message ?? e.json?.message
    return new Error(`${what}: the server answered ${status}${msg ? ` (${msg})` : ""}.`)
  }
  return new Error(`${what}: the server cannot be reached. The list catches up when it is back.`)
}
