// One entity: its live status and actions, the timeline of its main stream, its live
// slash commands, and the composer.

import { h, clear, announce, measure } from "../dom"
import { api, entityPath } from "../http"
import { followCommands, followShape, followStream, type Stop } from "../live"
import { argumentHint, type Command } from "../composer/commands"
import { Composer } from "../composer/composer"
import { TimelineList } from "./timelinelist"
import { errorBox, showError } from "./errors"
import { entityTools } from "./sendform"

const ACCEPTING = new Set(["idle", "running", "paused", "spawning"])

export function entityView(root: HTMLElement, type: string, id: string): Stop {
  const url = `/${type}/${id}` // the entity's URL, as rows and filters name it
  const path = `/${encodeURIComponent(type)}/${encodeURIComponent(id)}` // and as a request path
  const stops: Stop[] = []
  let firstTimeline = false
  let firstCommands = false
  const ready = () => {
    if (firstTimeline && firstCommands) {
      performance.mark("console:entity-ready")
      root.setAttribute("data-ready", "true")
    }
  }

  const status = h("span", { class: "badge status", id: "entity-status" }, "…")
  const tags = h("span", { class: "tags" })
  const errors = errorBox()
  const signal = (sig: string) => async () => {
    try {
      await api("POST", `${entityPath(type, id)}/signal`, { signal: sig })
      showError(errors, null)
      announce(`${sig} sent`)
    } catch (err) {
      showError(errors, err)
    }
  }
  const kill = async () => {
    if (!confirm(`Kill ${url}? Its stream is closed for good.`)) return
    try {
      await api("DELETE", entityPath(type, id))
      showError(errors, null)
    } catch (err) {
      showError(errors, err)
    }
  }
  const actions = h("div", { class: "row actions" },
    h("button", { type: "button", onclick: signal("SIGSTOP") }, "Pause"),
    h("button", { type: "button", onclick: signal("SIGCONT") }, "Resume"),
    h("button", { type: "button", onclick: signal("SIGTERM") }, "Stop"),
    h("button", { type: "button", class: "danger", onclick: kill }, "Kill"))

  const timeline = new TimelineList()
  const composer = new Composer(type, id)
  const commandsBody = h("ul", { class: "command-list" })
  const commandsCount = h("span", { class: "muted" })
  const commandsPanel = h("section", { class: "panel commands", "aria-labelledby": "commands-title" },
    h("h2", { id: "commands-title" }, "Slash commands ", commandsCount),
    commandsBody)

  clear(root)
  root.appendChild(h("div", { class: "entity-view" },
    h("header", { class: "entity-head" },
      h("h1", {}, url), status, tags, actions),
    errors,
    h("div", { class: "entity-main" },
      h("section", { class: "panel conversation", "aria-labelledby": "timeline-title" },
        h("h2", { id: "timeline-title" }, "Timeline"), timeline.el, composer.el,
        h("div", { id: "entity-tools" }, entityTools(type, id))),
      commandsPanel)))

  stops.push(followShape({ table: "entities", where: "url = $1", params: [url] }, (rows) => {
    const row = rows[0] as any
    if (!row) {
      status.textContent = "not found"
      composer.setDisabled(true, "There is no such entity (or you may not read it).")
      return
    }
    status.textContent = row.status
    status.className = `badge status st-${row.status}`
    clear(tags)
    const t = row.tags && typeof row.tags === "object" ? row.tags : {}
    for (const [k, v] of Object.entries(t)) tags.appendChild(h("span", { class: "tag" }, `${k}: ${String(v)}`))
    const accepting = ACCEPTING.has(row.status)
    composer.setDisabled(!accepting, `The entity is ${row.status}: it takes no more messages.`)
    for (const b of actions.querySelectorAll("button")) (b as HTMLButtonElement).disabled = row.status === "killed"
  }, (err) => showError(errors, err)))

  stops.push(followStream(`${path}/main`, (events, meta) => {
    const t0 = performance.now()
    if (firstTimeline) {
      timeline.append(events)
    } else {
      // the catch-up read may take many batches: render once it is complete
      timeline.hold(events)
      if (meta.upToDate) timeline.showHeld()
    }
    measure("console:timeline-batch", t0)
    if (meta.upToDate && !firstTimeline) {
      performance.mark("console:timeline-ready")
      firstTimeline = true
      ready()
    }
  }, (err) => showError(errors, err)))

  stops.push(followCommands(path, (cmds) => {
    const t0 = performance.now()
    composer.setCommands(cmds)
    renderCommands(commandsBody, cmds)
    commandsCount.textContent = `(${cmds.length})`
    measure("console:commands-update", t0)
    if (!firstCommands) {
      performance.mark("console:commands-ready")
      firstCommands = true
      ready()
    }
  }, (err) => showError(errors, err)))

  return () => {
    composer.destroy()
    for (const s of stops) s()
  }
}

function renderCommands(body: HTMLElement, cmds: Command[]): void {
  const frag = document.createDocumentFragment()
  for (const c of cmds) {
    frag.appendChild(h("li", { "data-command": c.name },
      h("div", {}, h("code", { class: "opt-name" }, "/" + c.name), " ", h("code", { class: "opt-hint" }, argumentHint(c)),
        h("span", { class: "opt-source" }, c.owner ? `${c.source} · ${c.owner}` : c.source ?? "")),
      c.description ? h("div", { class: "muted" }, c.description) : null))
  }
  clear(body)
  body.appendChild(frag)
}

