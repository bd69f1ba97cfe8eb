// A handler's reply as one timeline item. Handlers write a reply as Electric's runtime
// does (so that Electric's own UI shows it): a `run` row, `text` rows linked to it by
// run_id, and `text_delta` rows carrying the text, linked by text_id — and, when the run
// fails, `error` rows linked by run_id. The timeline folds all of them into the run's
// item, so a reply reads as one bubble however many events it took.

import { h, formatTime } from "../dom"
import type { StreamEvent } from "../live"

export type Reply = {
  key: string // the run's key
  status: string // started | completed | failed ("" before the run row is seen)
  finishReason: string
  texts: Map<string, string> // text id → text so far, in the order the texts began
  errors: string[]
  timestamp: unknown
}

/** replyKey names the reply an event belongs to, or "" for an event of no reply: a
 * `run` row by its key, and `text`, `text_delta` and `error` rows by their run_id. A
 * `text` without run_id (an older handler's whole reply in one event) is no part of a
 * run and is rendered on its own. */
export function replyKey(ev: StreamEvent): string {
  switch (ev.type) {
    case "run":
      return typeof ev.key === "string" ? ev.key : ""
    case "text":
    case "text_delta":
    case "error":
      return typeof ev.value?.run_id === "string" ? ev.value.run_id : ""
  }
  return ""
}

export function newReply(key: string): Reply {
  return { key, status: "", finishReason: "", texts: new Map(), errors: [], timestamp: undefined }
}

/** fold applies one event of the reply (replyKey(ev) === r.key) to it. */
export function fold(r: Reply, ev: StreamEvent): void {
  const v = ev.value ?? {}
  r.timestamp ??= ev.headers?.timestamp
  switch (ev.type) {
    case "run":
      if (ev.headers?.operation === "delete") return
      if (typeof v.status === "string") r.status = v.status
      if (typeof v.finish_reason === "string") r.finishReason = v.finish_reason
      return
    case "text":
      if (typeof ev.key === "string" && !r.texts.has(ev.key)) r.texts.set(ev.key, "")
      return
    case "text_delta": {
      if (typeof v.delta !== "string") return
      const id = typeof v.text_id === "string" ? v.text_id : ""
      r.texts.set(id, (r.texts.get(id) ?? "") + v.delta)
      return
    }
    case "error":
      r.errors.push(typeof v.message === "string" ? v.message : JSON.stringify(v))
      return
  }
}

/** renderReply renders the reply as one timeline item. */
export function renderReply(r: Reply): HTMLLIElement {
  const state = r.status === "failed" ? "failed" : r.status === "completed" ? "" : "streaming"
  const time = formatTime(r.timestamp)
  // the entity's side of the conversation (the viewer's own messages are on the other)
  const li = h("li", { class: `ev ev-reply msg theirs${state ? " reply-" + state : ""}`, "data-type": "run", "data-key": r.key })
  li.appendChild(h("div", { class: "ev-meta" }, h("span", { class: "ev-type" }, "reply"),
    state ? h("span", { class: `badge st-${state}` }, state) : null, time ? h("time", {}, time) : null))
  // the texts of one run in the order they began, a blank line apart (the body keeps
  // white space)
  const text = [...r.texts.values()].filter((t) => t !== "").join("\n\n")
  const bubble = h("div", { class: "ev-body reply bubble" }, text || (state === "streaming" ? "…" : ""))
  for (const e of r.errors) bubble.appendChild(h("div", { class: "reply-error", role: "note" }, e))
  li.appendChild(bubble)
  return li
}
