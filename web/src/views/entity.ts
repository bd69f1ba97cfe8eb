// One entity: its live status and actions, the timeline of its main stream, its live
// slash commands, and the composer.

import { h, clear, announce } from "../dom"
import { api, entityPath } from "../http"
import { followCommands, followShape, followStream, type Stop } from "../live"
import { argumentHint, type Command } from "../composer/commands"
import { Composer } from "../composer/composer"
import { renderEvent } from "./timeline"
import { errorBox, showError } from "./errors"

const ACCEPTING = new Set(["idle", "running", "paused", "spawning"])

export function entityView(root: HTMLElement, type: string, id: string): Stop {
  const url = `/${type}/${id}`
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

  const timeline = h("ol", { class: "timeline" })
  // The box is the log (new events are announced); the list inside keeps list semantics.
  const timelineBox = h("div", { class: "timeline-box", tabindex: "0", role: "log", "aria-label": "Timeline of the main stream" }, timeline)
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
        h("h2", { id: "timeline-title" }, "Timeline"), timelineBox, composer.el),
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

  stops.push(followStream(`${url}/main`, (events, meta) => {
    const nearBottom = timelineBox.scrollTop + timelineBox.clientHeight >= timelineBox.scrollHeight - 40
    const frag = document.createDocumentFragment()
    for (const ev of events) if (!ev.headers?.control) frag.appendChild(renderEvent(ev))
    timeline.appendChild(frag)
    if (nearBottom || !firstTimeline) timelineBox.scrollTop = timelineBox.scrollHeight
    if (meta.upToDate && !firstTimeline) {
      firstTimeline = true
      ready()
    }
  }, (err) => showError(errors, err)))

  stops.push(followCommands(url, (cmds) => {
    composer.setCommands(cmds)
    renderCommands(commandsBody, cmds)
    commandsCount.textContent = `(${cmds.length})`
    if (!firstCommands) {
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

