// An entity's main stream read as a conversation. Three kinds of item:
// - the conversation: inbox messages (the user's on one side, an entity's or another
//   principal's on the other) and the entity's replies (one bubble each, replies.ts);
// - activity: context and tool events (Electric's runtime writes context_inserted,
//   context_removed, tool_call, step, reasoning…), collapsed to one line per run of them;
// - system events: created, commands added/changed/removed, tags, signals, wakes and
//   any other event, folded into one expandable row per run of them.
// Inside a folded row each event is one compact line (renderEvent).

import { h, formatTime } from "../dom"
import type { StreamEvent } from "../live"
import type { ComposerNode } from "../composer/grammar"

export type Category = "message" | "activity" | "system"

const ACTIVITY = new Set(["context_inserted", "context_removed", "tool_call", "tool_result", "tool_error", "step",
  "reasoning", "reasoning_delta", "editor_tool_call"])

/** category says where an event of no reply goes (replies are found by replyKey first). */
export function category(ev: StreamEvent): Category {
  const t = ev.type ?? ""
  if (t === "inbox" && ev.headers?.operation === "insert") return "message"
  if (t === "text") return "message" // an older handler's whole reply in one event
  if (ACTIVITY.has(t) || t.startsWith("tool_") || t.startsWith("context_")) return "activity"
  return "system"
}

/** Who is reading: the viewer's principal URL when known, to tell their messages from others'. */
export type Reader = { viewer: string | null }

// ---- compact lines (inside a folded row) ----

/** renderEvent renders one event as a compact line; one a handler wrote in an
 * unexpected shape is shown as its JSON rather than stopping the timeline. */
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
  li.appendChild(h("div", { class: "ev-meta" }, h("span", { class: "ev-type" }, label(ev)), time ? h("time", {}, time) : null))
  li.appendChild(body(ev))
  return li
}

export function cssName(s: unknown): string {
  return String(s).replace(/[^a-z0-9_-]/gi, "_")
}

function label(ev: StreamEvent): string {
  const op = ev.headers?.operation
  switch (ev.type) {
    case "inbox":
      return op === "insert" ? `message from ${principalName(ev.value?.from)}` : `message ${ev.key}: ${op}`
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
    case "context_inserted":
      return "context inserted"
    case "context_removed":
      return "context removed"
    case "tool_call":
      return `tool ${ev.value?.tool_name ?? ""}${ev.value?.status ? " · " + ev.value.status : ""}`
    default:
      return `${ev.type ?? "event"}${op && op !== "insert" ? " " + op : ""}`
  }
}

/** principalName is a sender's name: "system:dev-local" for /principal/system%3Adev-local,
 * an entity's URL as it is. */
export function principalName(from: unknown): string {
  if (typeof from !== "string") return "?"
  const m = /^\/principal\/(.+)$/.exec(from)
  if (!m) return from
  try {
    return decodeURIComponent(m[1])
  } catch {
    return m[1]
  }
}

function body(ev: StreamEvent): Node {
  const v = ev.value
  const op = ev.headers?.operation
  switch (ev.type) {
    case "inbox":
      return h("div", { class: "ev-body muted" }, summary(v))
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

// ---- folded rows ----

const plural = (n: number, one: string, many: string) => (n === 1 ? one : `${n} ${many}`)

/** foldSummary names a run of system or activity events in a few words:
 * "Created · 5 commands changed", "Context inserted · tool search (completed)". */
export function foldSummary(events: readonly StreamEvent[]): string {
  const counts = new Map<string, number>()
  const tools = new Map<string, string>() // tool call key → "name (status)"
  const signals: string[] = []
  for (const ev of events) {
    const t = ev.type ?? "event"
    if (t === "tool_call") {
      tools.set(String(ev.key), `${ev.value?.tool_name ?? "tool"}${ev.value?.status ? ` (${ev.value.status})` : ""}`)
      continue
    }
    if (t === "signal" && typeof ev.value?.signal === "string") signals.push(ev.value.signal)
    counts.set(t, (counts.get(t) ?? 0) + 1)
  }
  const parts: string[] = []
  for (const [t, n] of counts) {
    switch (t) {
      case "entity_created": parts.push("Created"); break
      case "entity_stopped": parts.push("Stopped"); break
      case "slash_command": parts.push(plural(n, "1 command changed", "commands changed")); break
      case "tags": parts.push(plural(n, "1 tag changed", "tags changed")); break
      case "signal": parts.push(n <= 3 ? `signal ${signals.join(", ")}` : `${n} signals`); break
      case "inbox": parts.push(plural(n, "1 message update", "message updates")); break
      case "wake": parts.push(plural(n, "1 wake", "wakes")); break
      case "context_inserted": parts.push(n === 1 ? "context inserted" : `${n} context insertions`); break
      case "context_removed": parts.push(n === 1 ? "context removed" : `${n} context removals`); break
      case "step": parts.push(plural(n, "1 step", "steps")); break
      case "reasoning": case "reasoning_delta": if (!parts.includes("reasoning")) parts.push("reasoning"); break
      default: parts.push(`${n} ${t.replace(/_/g, " ")}`)
    }
  }
  if (tools.size > 0) parts.push(tools.size <= 2 ? [...tools.values()].map((x) => `tool ${x}`).join(" · ") : `${tools.size} tool calls`)
  const s = parts.join(" · ")
  return s.charAt(0).toUpperCase() + s.slice(1)
}

// ---- the conversation ----

/** renderMessage renders an inbox message as a chat bubble: the viewer's own on one
 * side, another sender's (an entity, another principal) on the other with "from …".
 * Delivery state shows only when it is not the usual (queued, pending, cancelled…). */
export function renderMessage(ev: StreamEvent, reader: Reader): HTMLLIElement {
  const v = ev.value ?? {}
  const from = typeof v.from === "string" ? v.from : ""
  const isPrincipal = from.startsWith("/principal/")
  const mine = isPrincipal && (reader.viewer === null || reader.viewer === from)
  const time = formatTime(ev.headers?.timestamp ?? v.timestamp)
  const li = h("li", { class: `ev ev-inbox msg ${mine ? "mine" : "theirs"}`, "data-type": "inbox", "data-key": ev.key ?? "" })
  const meta = h("div", { class: "ev-meta" },
    h("span", { class: `from${mine ? "" : " foreign"}` }, `from ${principalName(from)}`),
    time ? h("time", {}, time) : null)
  li.appendChild(meta)
  const badges: (HTMLElement | null)[] = [
    v.message_type && v.message_type !== "composer_input" ? h("span", { class: "badge" }, v.message_type) : null,
    v.mode && v.mode !== "immediate" ? h("span", { class: "badge" }, String(v.mode)) : null,
    v.status && v.status !== "processed" ? h("span", { class: `badge st-${cssName(v.status)}` }, String(v.status)) : null,
  ]
  const p = v.payload
  const content = v.message_type === "composer_input" && typeof p?.source === "string"
    ? composed(p.source, Array.isArray(p.nodes) ? p.nodes : [])
    : details(p)
  li.appendChild(h("div", { class: "ev-body message bubble" }, content,
    badges.some(Boolean) ? h("span", { class: "badges" }, badges) : null))
  return li
}

/** renderText renders a `text` event of no run (an older handler's whole reply). */
export function renderText(ev: StreamEvent): HTMLLIElement {
  const v = ev.value
  const time = formatTime(ev.headers?.timestamp ?? v?.timestamp)
  return h("li", { class: "ev ev-text msg theirs", "data-type": "text", "data-key": ev.key ?? "" },
    h("div", { class: "ev-meta" }, h("span", { class: "ev-type" }, "reply"), time ? h("time", {}, time) : null),
    h("div", { class: "ev-body reply bubble" }, typeof v?.text === "string" ? v.text : json(v)))
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
