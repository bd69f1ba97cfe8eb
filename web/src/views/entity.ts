// One entity: its live status and the actions its status allows, the conversation on its
// main stream, its live slash commands, and the composer (which has the focus when the
// view opens). An entity that does not exist (or that the viewer may not read) is a
// not-found view with a way back; failures are said in words and cleared when they no
// longer apply.

import { h, clear, announce, measure } from "../dom"
import { api, entityPath } from "../http"
import { followCommands, followShape, followStream, type Stop } from "../live"
import { argumentHint, type Command } from "../composer/commands"
import { Composer } from "../composer/composer"
import { curlButton } from "../curl"
import { BASE } from "../router"
import { TimelineList } from "./timelinelist"
import { errorBox, isNotFound, showError } from "./errors"
import { entityTools } from "./sendform"

const ACCEPTING = new Set(["idle", "running", "paused", "spawning"])
const PAUSABLE = new Set(["idle", "running", "spawning"])

type Action = { label: string; button: HTMLButtonElement; shown: (status: string) => boolean }

export function entityView(root: HTMLElement, type: string, id: string): Stop {
  const url = `/${type}/${id}` // the entity's URL, as rows and filters name it
  const path = `/${encodeURIComponent(type)}/${encodeURIComponent(id)}` // and as a request path
  const stops: Stop[] = []
  let stopped = false
  let firstTimeline = false
  let firstCommands = false
  let status = "" // "" until the entities shape has the row
  let commands: Command[] = []
  const ready = () => {
    if (firstTimeline && firstCommands) {
      performance.mark("console:entity-ready")
      root.setAttribute("data-ready", "true")
    }
  }
  const stopAll = () => {
    if (stopped) return
    stopped = true
    composer.destroy()
    for (const s of stops) s()
  }

  const statusBadge = h("span", { class: "badge status", id: "entity-status" }, "loading")
  const tags = h("span", { class: "tags" })
  const errors = errorBox()

  // ---- actions: each shown only when the status allows it ----
  // a signal on its way: its button says so (aria-disabled, not disabled, so that the
  // focus stays on it and moves on to its successor when the status changes)
  const signal = (sig: string, label: string) => async (e: Event) => {
    const b = e.currentTarget as HTMLButtonElement
    if (b.getAttribute("aria-disabled") === "true") return
    b.setAttribute("aria-disabled", "true")
    try {
      await api("POST", `${entityPath(type, id)}/signal`, { signal: sig })
      showError(errors, null)
      announce(`${label}: sent`)
    } catch (err) {
      showError(errors, err)
    } finally {
      b.removeAttribute("aria-disabled")
    }
  }
  const actionsList: Action[] = [
    { label: "Pause", button: h("button", { type: "button", onclick: signal("SIGSTOP", "Pause") }, "Pause"), shown: (s) => PAUSABLE.has(s) },
    { label: "Resume", button: h("button", { type: "button", onclick: signal("SIGCONT", "Resume") }, "Resume"), shown: (s) => s === "paused" },
    { label: "Stop", button: h("button", { type: "button", onclick: signal("SIGTERM", "Stop") }, "Stop"), shown: (s) => s !== "stopped" && s !== "killed" },
    { label: "Kill", button: h("button", { type: "button", class: "danger", onclick: () => askKill() }, "Kill"), shown: (s) => s !== "killed" },
  ]
  const killButton = actionsList[3].button
  const actions = h("div", { class: "row actions", role: "group", "aria-label": "Actions" }, actionsList.map((a) => a.button))

  // Kill is confirmed in the page: the question, Kill and Cancel in place of the actions.
  const killText = h("span", { id: "kill-question" }, `Kill ${url}? Its stream closes for good.`)
  const confirmKill = h("button", { type: "button", class: "danger", onclick: () => void kill() }, "Kill")
  const cancelKill = h("button", { type: "button", onclick: () => closeKill(true) }, "Cancel")
  const killConfirm = h("div", { class: "kill-confirm", role: "group", "aria-labelledby": "kill-question", hidden: true },
    killText, confirmKill, cancelKill)
  killConfirm.addEventListener("keydown", (e) => {
    if (e.key === "Escape") {
      e.preventDefault()
      closeKill(true)
    }
  })
  const askKill = () => {
    actions.hidden = true
    killConfirm.hidden = false
    cancelKill.focus()
  }
  const closeKill = (refocus: boolean) => {
    killConfirm.hidden = true
    actions.hidden = false
    if (refocus && !killButton.hidden) killButton.focus()
  }
  const kill = async () => {
    confirmKill.disabled = true
    try {
      await api("DELETE", entityPath(type, id))
      showError(errors, null)
      announce(`${url} killed`)
      closeKill(false)
      composer.focus()
    } catch (err) {
      showError(errors, err)
      closeKill(true)
    } finally {
      confirmKill.disabled = false
    }
  }

  // "copy as curl" for each action, out of the way in a small menu
  const signalCall = (sig: string) => () => ({ method: "POST", path: `${entityPath(type, id)}/signal`, body: { signal: sig } })
  const more = h("details", { class: "more-menu" },
    h("summary", { "aria-label": "Copy an action as curl", title: "Copy an action as curl" }, "curl"),
    h("div", { class: "more-items" },
      curlButton(signalCall("SIGSTOP"), "Pause as curl"),
      curlButton(signalCall("SIGCONT"), "Resume as curl"),
      curlButton(signalCall("SIGTERM"), "Stop as curl"),
      curlButton(() => ({ method: "DELETE", path: entityPath(type, id) }), "Kill as curl")))

  const showActions = () => {
    const focused = actionsList.find((a) => a.button === document.activeElement)
    for (const a of actionsList) a.button.hidden = status === "" || !a.shown(status)
    if (status === "killed") closeKill(false)
    // the button that had the focus went away (Pause once paused): its successor has it
    if (focused?.button.hidden) {
      const next = actionsList.find((a) => !a.button.hidden)?.button
      if (next) next.focus()
      else composer.focus()
    }
  }
  showActions()

  // ---- the conversation ----
  const timeline = new TimelineList()
  const composer = new Composer(type, id)
  composer.onOutgoing = (m) => timeline.addPending(m)
  // the slot under the composer for other tools of the entity (typed messages, the stream inspector)
  const tools = h("div", { id: "entity-tools", class: "entity-tools" }, entityTools(type, id))
  const commandsBody = h("ul", { class: "command-list" })
  const commandsCount = h("span", { class: "muted" })
  const commandsPanel = h("section", { class: "panel commands", "aria-labelledby": "commands-title" },
    h("h2", { id: "commands-title" }, "Slash commands ", commandsCount),
    commandsBody)

  const emptyState = () => {
    if (status !== "" && !ACCEPTING.has(status)) {
      timeline.setEmpty(h("p", {}, "No messages."))
      return
    }
    const first = commands.find((c) => c.name === "quickstart") ?? commands[0]
    const intro = h("p", {}, "No messages yet. Write the first one below.")
    if (!first) {
      timeline.setEmpty(intro)
      return
    }
    timeline.setEmpty(intro, h("p", { class: "suggest" },
      h("button", { type: "button", class: "suggest-command", onclick: () => composer.insertCommand(first.name) }, `Try /${first.name}`),
      first.description ? h("span", { class: "muted" }, ` ${first.description}`) : null))
  }

  clear(root)
  root.appendChild(h("div", { class: "entity-view" },
    h("header", { class: "entity-head" },
      h("h1", {}, url), statusBadge, tags, actions, killConfirm, more),
    errors,
    h("div", { class: "entity-main" },
      h("section", { class: "panel conversation", "aria-labelledby": "timeline-title" },
        h("h2", { id: "timeline-title" }, "Conversation"), timeline.el, composer.el, tools),
      commandsPanel)))

  const notFound = () => {
    if (stopped) return
    stopAll()
    const hadFocus = root.contains(document.activeElement)
    clear(root)
    const heading = h("h1", { tabindex: "-1" }, "No such entity")
    root.appendChild(h("div", { class: "entity-view not-found" },
      heading,
      h("p", {}, "There is no entity ", h("code", {}, url), " (or you may not read it)."),
      h("p", {}, h("a", { href: `${BASE}/entities`, "data-link": "" }, "Back to Entities"))))
    root.setAttribute("data-ready", "true")
    if (hadFocus) heading.focus()
  }
  // A live read's failure is shown until that read works again (the clients retry).
  let liveFailed = false
  const failed = (err: Error) => {
    if (isNotFound(err)) {
      notFound()
      return
    }
    showError(errors, err)
    liveFailed = true
  }
  const liveAgain = () => {
    if (!liveFailed) return
    liveFailed = false
    showError(errors, null)
  }

  stops.push(followShape({ table: "entities", where: "url = $1", params: [url] }, (rows) => {
    const row = rows[0] as any
    if (!row) {
      // the shape is in sync and has no such row
      notFound()
      return
    }
    liveAgain()
    if (status !== "" && row.status !== status) showError(errors, null) // what failed before may not apply now
    status = row.status
    statusBadge.textContent = row.status
    statusBadge.className = `badge status st-${row.status}`
    clear(tags)
    const t = row.tags && typeof row.tags === "object" ? row.tags : {}
    for (const [k, v] of Object.entries(t)) tags.appendChild(h("span", { class: "tag" }, `${k}: ${String(v)}`))
    const accepting = ACCEPTING.has(row.status)
    composer.setDisabled(!accepting, `The entity is ${row.status}: it takes no more messages.`)
    showActions()
    emptyState()
  }, failed))

  stops.push(followStream(`${path}/main`, (events, meta) => {
    const t0 = performance.now()
    liveAgain()
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
  }, failed))

  stops.push(followCommands(path, (cmds) => {
    const t0 = performance.now()
    commands = cmds
    composer.setCommands(cmds)
    renderCommands(commandsBody, cmds)
    commandsCount.textContent = `(${cmds.length})`
    emptyState()
    measure("console:commands-update", t0)
    if (!firstCommands) {
      performance.mark("console:commands-ready")
      firstCommands = true
      ready()
    }
  }, failed))

  // The composer has the focus when the view opens (after the shell has focused the
  // new view's heading, which a screen reader still finds by its level).
  queueMicrotask(() => {
    if (!stopped) composer.focus()
  })

  return stopAll
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
