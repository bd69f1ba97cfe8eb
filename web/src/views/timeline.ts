// An entity's main stream as a timeline: inbox messages rendered from their
// composer_input nodes, signals, command changes, and every other State Protocol event
// in a compact form. A handler's reply (a run with its texts, see replies.ts) is one
// item that the list folds together; a `text` event of no run (an older handler's whole
// reply, {text}) is rendered here.

import { h, formatTime } from "../dom"
import type { StreamEvent } from "../live"
import type { ComposerNode } from "../composer/grammar"

/** renderEvent renders one event; one a handler wrote in an unexpected shape is shown
 * as its JSON rather than stopping the timeline. */
export function renderEvent(ev: StreamEvent): HTMLLIElement {
  try {
    return renderKnown(ev)
  } catch {
    return h("li", { class: "ev ev-unrenderable" }, h("div", { class: "ev-meta" }, h("span", { class: "ev-type" }, "event")), details(ev))
  }
}

function renderKnown(ev: StreamEvent): HTMLLIElement {
  const op = ev.headers?.operation ?? ""
  const time = formatTime(ev.headers?.timestamp ?? ev.value?.timestamp)
  const li = h("li", { class: `ev ev-${cssName(ev.type ?? "event")} op-${op}`, "data-type": ev.type ?? "", "data-key": ev.key ?? "" })
  const meta = h("div", { class: "ev-meta" }, h("span", { class: "ev-type" }, label(ev)), time ? h("time", {}, time) : null)
  li.appendChild(meta)
  li.appendChild(body(ev))
  return li
}

function cssName(s: unknown): string {
  return String(s).replace(/[^a-z0-9_-]/gi, "_")
}

function label(ev: StreamEvent): string {
  const op = ev.headers?.operation
  switch (ev.type) {
    case "inbox":
      return op === "insert" ? `message from ${principal(ev.value?.from)}` : `message ${ev.key}: ${op}`
    case "text":
      return "reply"
    case "signal":
      return "signal"
    case "slash_command":
      return op === "delete" ? "command removed" : op === "insert" ? "command added" : "command changed"
    case "entity_created":
      return "created"
    case "tags":
      return "tag"
    default:
      return `${ev.type ?? "event"}${op && op !== "insert" ? " " + op : ""}`
  }
}

function principal(from: unknown): string {
  if (typeof from !== "string") return "?"
  const m = /^\/principal\/(.+)$/.exec(from)
  return m ? decodeURIComponent(m[1]) : from
}

function body(ev: StreamEvent): Node {
  const v = ev.value
  const op = ev.headers?.operation
  switch (ev.type) {
    case "inbox":
      if (op === "insert") return inboxMessage(v)
      return h("div", { class: "ev-body muted" }, summary(v))
    case "text":
      return h("div", { class: "ev-body reply" }, typeof v?.text === "string" ? v.text : json(v))
    case "signal":
      return h("div", { class: "ev-body" }, h("code", {}, String(v?.signal ?? json(v))))
    case "slash_command": {
      const name = v?.name ?? ev.key
      if (op === "delete") return h("div", { class: "ev-body" }, h("code", {}, "/" + name))
      return h("div", { class: "ev-body" }, h("code", {}, "/" + name), " ",
        h("span", { class: "muted" }, [v?.source, v?.owner].filter(Boolean).join(" · ")), v?.description ? " — " + v.description : "")
    }
    case "tags":
      return h("div", { class: "ev-body" }, h("code", {}, `${v?.key ?? ev.key} = ${v?.value === undefined ? "(removed)" : JSON.stringify(v.value)}`))
    case "entity_created":
      return h("div", { class: "ev-body muted" }, `type ${v?.entity_type ?? "?"}, args ${JSON.stringify(v?.args ?? {})}`)
    default:
      return details(v)
  }
}

function summary(v: any): string {
  if (!v || typeof v !== "object") return json(v)
  return Object.entries(v).map(([k, x]) => `${k}: ${typeof x === "string" ? x : JSON.stringify(x)}`).join(", ")
}

function json(v: unknown): string {
  try {
    return JSON.stringify(v)
  } catch {
    return String(v)
  }
}

function details(v: unknown): Node {
  const text = JSON.stringify(v, null, 2) ?? "null"
  const short = text.length > 120 ? text.slice(0, 117).replace(/\s+/g, " ") + "…" : text.replace(/\s+/g, " ")
  return h("details", { class: "ev-body" }, h("summary", {}, short), h("pre", {}, text))
}

function inboxMessage(v: any): Node {
  const badges = h("span", { class: "badges" },
    v?.message_type ? h("span", { class: "badge" }, v.message_type) : null,
    v?.mode ? h("span", { class: "badge" }, v.mode) : null,
    v?.status ? h("span", { class: `badge st-${cssName(v.status)}` }, v.status) : null)
  const p = v?.payload
  if (v?.message_type === "composer_input" && typeof p?.source === "string") {
    return h("div", { class: "ev-body message" }, composed(p.source, Array.isArray(p.nodes) ? p.nodes : []), badges)
  }
  return h("div", { class: "ev-body message" }, details(p), badges)
}

/** composed renders a composer_input source with its nodes marked at their UTF-16 spans. */
export function composed(source: string, nodes: ComposerNode[]): HTMLElement {
  const el = h("p", { class: "composed" })
  let at = 0
  for (const n of nodes) {
    if (!Number.isInteger(n.start) || !Number.isInteger(n.end) || n.start < at || n.end < n.start || n.end > source.length) continue
    if (n.start > at) el.appendChild(document.createTextNode(source.slice(at, n.start)))
    const cls = n.kind === "slash_command" ? `chip${n.unknown ? " unknown" : ""}` : `ref ref-${cssName(n.kind)}`
    el.appendChild(h("span", { class: cls, title: n.unknown ? "unknown command" : n.kind }, source.slice(n.start, n.end)))
    at = n.end
  }
  if (at < source.length) el.appendChild(document.createTextNode(source.slice(at)))
  return el
}
