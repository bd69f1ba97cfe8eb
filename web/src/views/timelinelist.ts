// The timeline's list: every event of the stream is kept, the newest items are rendered,
// and earlier ones are rendered on demand (a button, or scrolling to the top), so that a
// long stream opens in the time of what a person can see. Items are:
// - a message (an inbox insert; later inbox updates of it change it in place),
// - a reply (its run, texts, deltas and errors: one item placed where the reply began,
//   re-rendered as later events of it arrive),
// - a fold: a run of consecutive system events (one expandable row), or of context and
//   tool events (one collapsed line), growing while the run goes on.
// Below them, the messages this tab is sending: pending until their inbox event arrives.

import { h, announce } from "../dom"
import { token } from "../http"
import type { StreamEvent } from "../live"
import type { Outgoing } from "../composer/composer"
import { category, composed, foldSummary, renderEvent, renderMessage, renderText, type Reader } from "./timeline"
import { fold, newReply, renderReply, replyKey, type Reply } from "./replies"
import { formatTime } from "../dom"

const PAGE = 200

type Fold = { kind: "system" | "activity"; events: StreamEvent[]; open: boolean }

/** An item of the timeline: one event, one reply or one fold. li is set while it is rendered. */
type Item = { ev?: StreamEvent; reply?: Reply; fold?: Fold; li?: HTMLLIElement }

// The viewer's principal, learned from the first of its own messages that comes back on
// a stream (the server names the sender), kept for the tab and its token.
const VIEWER_KEY = "entityd.console.viewer"

function storedViewer(): string | null {
  try {
    const v = JSON.parse(sessionStorage.getItem(VIEWER_KEY) ?? "null")
    return v && v.token === (token() ?? "") && typeof v.viewer === "string" ? v.viewer : null
  } catch {
    return null
  }
}

export class TimelineList {
  readonly el: HTMLElement
  private list = h("ol", { class: "timeline" })
  private pendingList = h("ol", { class: "timeline outbox", "aria-label": "Messages being sent" })
  private earlier: HTMLButtonElement
  private loading = h("p", { class: "timeline-loading muted" }, "Loading the conversation…")
  private empty = h("div", { class: "timeline-empty", hidden: true })
  private items: Item[] = []
  private replies = new Map<string, Item>() // by run key
  private messages = new Map<string, Item>() // inbox messages by key
  private pending = new Map<string, { msg: Outgoing; li: HTMLLIElement }>()
  private principals = new Set<string>()
  private conversation = 0 // messages and replies
  private events = 0 // events held (the box says how many, and into how many items)
  private ready = false
  private reader: Reader = { viewer: storedViewer() }
  private firstShown = 0 // index in items of the first rendered item

  constructor() {
    this.earlier = h("button", { type: "button", class: "earlier", hidden: true, onclick: () => this.showEarlier() })
    // The box is the log (new events are announced); the lists inside keep list semantics.
    this.el = h("div", { class: "timeline-box", tabindex: "0", role: "log", "aria-label": "Conversation", "aria-busy": "true" },
      this.loading, this.earlier, this.list, this.empty, this.pendingList)
    this.el.addEventListener("scroll", () => {
      if (this.el.scrollTop === 0 && this.firstShown > 0) this.showEarlier()
    })
  }

  get rendered(): number {
    return this.items.length - this.firstShown
  }

  /** isEmpty: no message or reply yet (system events do not count), nothing being sent. */
  get isEmpty(): boolean {
    return this.conversation === 0 && this.pending.size === 0
  }

  /** setEmpty puts what the empty timeline shows (a short text, a suggestion). */
  setEmpty(...content: Node[]): void {
    this.empty.replaceChildren(...content)
    this.updateEmpty()
  }

  private updateEmpty(): void {
    this.empty.hidden = !this.ready || !this.isEmpty || this.empty.childNodes.length === 0
  }

  /** add takes one event: a new item, or a change to an item already listed (returned
   * in changed when it is rendered). */
  private add(ev: StreamEvent, changed: Set<Item>): void {
    if (ev.headers?.control) return
    this.events++
    const key = replyKey(ev)
    if (key) {
      let it = this.replies.get(key)
      if (!it) {
        it = { reply: newReply(key) }
        this.replies.set(key, it)
        this.items.push(it)
        this.conversation++
      } else if (it.li) {
        changed.add(it)
      }
      fold(it.reply!, ev)
      return
    }
    const cat = category(ev)
    if (cat === "message") {
      if (ev.type === "inbox") this.addMessage(ev)
      else this.items.push({ ev })
      this.conversation++
      return
    }
    if (ev.type === "inbox" && typeof ev.key === "string" && this.messages.has(ev.key)) {
      // an update of a message listed (processed, released, edited) changes it in place
      const it = this.messages.get(ev.key)!
      const op = ev.headers?.operation
      const value = op === "delete" ? { ...it.ev!.value, status: "withdrawn" } : { ...it.ev!.value, ...(ev.value ?? {}) }
      it.ev = { ...it.ev!, value }
      if (it.li) changed.add(it)
      return
    }
    const last = this.items[this.items.length - 1]
    if (last?.fold && last.fold.kind === cat) {
      last.fold.events.push(ev)
      if (last.li) changed.add(last)
      return
    }
    this.items.push({ fold: { kind: cat, events: [ev], open: false } })
  }

  private addMessage(ev: StreamEvent): void {
    const it: Item = { ev }
    this.items.push(it)
    if (typeof ev.key === "string") {
      this.messages.set(ev.key, it)
      const p = this.pending.get(ev.key)
      if (p) {
        // this tab's message is on the stream: it is delivered, and its sender is the viewer
        p.li.remove()
        this.pending.delete(ev.key)
        const from = ev.value?.from
        if (typeof from === "string" && from !== this.reader.viewer) {
          this.reader.viewer = from
          try {
            sessionStorage.setItem(VIEWER_KEY, JSON.stringify({ token: token() ?? "", viewer: from }))
          } catch {}
        }
      }
    }
    const from = ev.value?.from
    if (typeof from === "string" && from.startsWith("/principal/") && !this.principals.has(from)) {
      this.principals.add(from)
      // several people talking: every message says who sent it
      this.list.classList.toggle("multi", this.principals.size > 1)
    }
  }

  private render(it: Item): HTMLLIElement {
    if (it.reply) it.li = renderReply(it.reply)
    else if (it.fold) it.li = renderFold(it.fold)
    else if (it.ev!.type === "inbox") it.li = renderMessage(it.ev!, this.reader)
    else if (it.ev!.type === "text") it.li = renderText(it.ev!)
    else it.li = renderEvent(it.ev!)
    return it.li
  }

  /** hold keeps events of the catch-up read (which may come in many batches) without
   * rendering them; showHeld then renders the newest page of them. */
  hold(events: readonly StreamEvent[]): void {
    const changed = new Set<Item>()
    for (const ev of events) this.add(ev, changed)
  }

  showHeld(): void {
    this.firstShown = Math.max(0, this.items.length - PAGE)
    const frag = document.createDocumentFragment()
    for (let i = this.firstShown; i < this.items.length; i++) frag.appendChild(this.render(this.items[i]))
    this.list.appendChild(frag)
    this.loading.remove()
    this.el.removeAttribute("aria-busy")
    this.ready = true
    this.updateEarlier()
    this.updateEmpty()
    this.el.scrollTop = this.el.scrollHeight
  }

  /** append adds live events at the end, following them when the view was at the end;
   * a rendered item they continue is rendered again in its place. */
  append(events: readonly StreamEvent[]): void {
    const nearBottom = this.el.scrollTop + this.el.clientHeight >= this.el.scrollHeight - 40
    const start = this.items.length
    const changed = new Set<Item>()
    const pendingBefore = this.pending.size
    for (const ev of events) this.add(ev, changed)
    if (start === this.items.length && changed.size === 0 && pendingBefore === this.pending.size) return
    for (const it of changed) it.li!.replaceWith(this.render(it))
    const frag = document.createDocumentFragment()
    for (let i = start; i < this.items.length; i++) frag.appendChild(this.render(this.items[i]))
    this.list.appendChild(frag)
    this.updateEarlier()
    this.updateEmpty()
    if (nearBottom || pendingBefore !== this.pending.size) this.el.scrollTop = this.el.scrollHeight
  }

  /** showEarlier renders the page before the first rendered item, keeping the view where it was. */
  showEarlier(): void {
    if (this.firstShown === 0) return
    const from = Math.max(0, this.firstShown - PAGE)
    const frag = document.createDocumentFragment()
    for (let i = from; i < this.firstShown; i++) frag.appendChild(this.render(this.items[i]))
    const before = this.el.scrollHeight
    this.list.insertBefore(frag, this.list.firstChild)
    this.firstShown = from
    this.updateEarlier()
    this.el.scrollTop += this.el.scrollHeight - before
  }

  private updateEarlier(): void {
    this.el.dataset.events = String(this.events)
    this.el.dataset.items = String(this.items.length)
    this.earlier.hidden = this.firstShown === 0
    this.earlier.textContent = `Show earlier (${this.firstShown} more)`
  }

  // ---- messages being sent ----

  /** addPending shows a message this tab is sending, as the viewer's own bubble; it
   * follows msg's state until the message's inbox event arrives on the stream. */
  addPending(msg: Outgoing): void {
    if (this.messages.has(msg.key)) return // already on the stream
    const entry = { msg, li: renderPending(msg) }
    const old = this.pending.get(msg.key)
    if (old) old.li.replaceWith(entry.li)
    else this.pendingList.appendChild(entry.li)
    this.pending.set(msg.key, entry)
    msg.onChange = () => {
      const cur = this.pending.get(msg.key)
      if (!cur) return
      if (msg.state === "discarded") {
        cur.li.remove()
        this.pending.delete(msg.key)
        this.updateEmpty()
        return
      }
      const nearBottom = this.el.scrollTop + this.el.clientHeight >= this.el.scrollHeight - 40
      const li = renderPending(msg)
      cur.li.replaceWith(li)
      cur.li = li
      if (nearBottom) this.el.scrollTop = this.el.scrollHeight // the reason and Retry in view
      if (msg.state === "failed") announce(`Not sent: ${msg.reason ?? ""}`)
    }
    this.updateEmpty()
    this.el.scrollTop = this.el.scrollHeight
  }
}

function renderFold(f: Fold): HTMLLIElement {
  const first = f.events[0]
  const time = formatTime(first?.headers?.timestamp ?? first?.value?.timestamp)
  const body = h("ol", { class: "fold-events" })
  let filled = false
  const fill = () => {
    if (filled) return
    filled = true
    const frag = document.createDocumentFragment()
    for (const ev of f.events) frag.appendChild(renderEvent(ev))
    body.appendChild(frag)
  }
  const det = h("details", { class: "fold-details" },
    h("summary", {}, h("span", { class: "fold-summary" }, foldSummary(f.events)), time ? h("time", {}, time) : null),
    body)
  // the events are rendered when the row is opened (a long run costs nothing folded)
  det.addEventListener("toggle", () => {
    f.open = det.open
    if (det.open) fill()
  })
  if (f.open) {
    det.open = true
    fill()
  }
  return h("li", { class: `ev fold fold-${f.kind}`, "data-type": f.kind, "data-count": f.events.length }, det)
}

function renderPending(m: Outgoing): HTMLLIElement {
  const p = m.payload as { source?: unknown; nodes?: unknown }
  const content = typeof p?.source === "string" ? composed(p.source, Array.isArray(p.nodes) ? p.nodes : []) : h("pre", {}, JSON.stringify(m.payload))
  const failed = m.state === "failed"
  const state = failed ? "Not sent" : m.state === "sent" ? "Sent" : "Sending…"
  const li = h("li", { class: `ev ev-inbox msg mine pending${failed ? " failed" : ""}`, "data-key": m.key, "data-state": m.state },
    h("div", { class: "ev-meta" }, h("span", { class: "delivery" }, state)),
    h("div", { class: "ev-body message bubble" }, content))
  if (failed) {
    li.appendChild(h("div", { class: "not-sent", role: "alert" },
      h("p", { class: "error-summary" }, m.reason ?? "The message was not sent."),
      m.detail ? h("p", { class: "error-code" }, m.detail) : null,
      h("div", { class: "row" },
        h("button", { type: "button", class: "retry", onclick: () => m.retry() }, "Retry"),
        h("button", { type: "button", class: "discard", onclick: () => m.discard() }, "Discard"))))
  }
  return li
}
