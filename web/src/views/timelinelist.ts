// The timeline's list: every event of the stream is kept, the newest ones are rendered,
// and earlier ones are rendered on demand (a button, or scrolling to the top), so that a
// long stream opens in the time of what a person can see. The events of one reply (its
// run, texts, deltas and errors) are one item, placed where the reply began and
// re-rendered as later events of it arrive.

import { h } from "../dom"
import type { StreamEvent } from "../live"
import { renderEvent } from "./timeline"
import { fold, newReply, renderReply, replyKey, type Reply } from "./replies"

const PAGE = 200

/** An item of the timeline: one event, or one reply. li is set while it is rendered. */
type Item = { ev?: StreamEvent; reply?: Reply; li?: HTMLLIElement }

function render(it: Item): HTMLLIElement {
  it.li = it.reply ? renderReply(it.reply) : renderEvent(it.ev!)
  return it.li
}

export class TimelineList {
  readonly el: HTMLElement
  private list = h("ol", { class: "timeline" })
  private earlier: HTMLButtonElement
  private items: Item[] = []
  private replies = new Map<string, Item>() // by run key
  private firstShown = 0 // index in items of the first rendered item

  constructor() {
    this.earlier = h("button", { type: "button", class: "earlier", hidden: true, onclick: () => this.showEarlier() })
    // The box is the log (new events are announced); the list inside keeps list semantics.
    this.el = h("div", { class: "timeline-box", tabindex: "0", role: "log", "aria-label": "Timeline of the main stream" },
      this.earlier, this.list)
    this.el.addEventListener("scroll", () => {
      if (this.el.scrollTop === 0 && this.firstShown > 0) this.showEarlier()
    })
  }

  get rendered(): number {
    return this.items.length - this.firstShown
  }

  /** add takes one event: a new item, or a change to a reply already listed (returned
   * in changed when it is rendered). */
  private add(ev: StreamEvent, changed: Set<Item>): void {
    if (ev.headers?.control) return
    const key = replyKey(ev)
    if (!key) {
      this.items.push({ ev })
      return
    }
    let it = this.replies.get(key)
    if (!it) {
      it = { reply: newReply(key) }
      this.replies.set(key, it)
      this.items.push(it)
    } else if (it.li) {
      changed.add(it)
    }
    fold(it.reply!, ev)
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
    for (let i = this.firstShown; i < this.items.length; i++) frag.appendChild(render(this.items[i]))
    this.list.appendChild(frag)
    this.updateEarlier()
    this.el.scrollTop = this.el.scrollHeight
  }

  /** append adds live events at the end, following them when the view was at the end;
   * a rendered reply they continue is rendered again in its place. */
  append(events: readonly StreamEvent[]): void {
    const nearBottom = this.el.scrollTop + this.el.clientHeight >= this.el.scrollHeight - 40
    const start = this.items.length
    const changed = new Set<Item>()
    for (const ev of events) this.add(ev, changed)
    if (start === this.items.length && changed.size === 0) return
    for (const it of changed) it.li!.replaceWith(render(it))
    const frag = document.createDocumentFragment()
    for (let i = start; i < this.items.length; i++) frag.appendChild(render(this.items[i]))
    this.list.appendChild(frag)
    if (nearBottom) this.el.scrollTop = this.el.scrollHeight
  }

  /** showEarlier renders the page before the first rendered event, keeping the view where it was. */
  showEarlier(): void {
    if (this.firstShown === 0) return
    const from = Math.max(0, this.firstShown - PAGE)
    const frag = document.createDocumentFragment()
    for (let i = from; i < this.firstShown; i++) frag.appendChild(render(this.items[i]))
    const before = this.el.scrollHeight
    this.list.insertBefore(frag, this.list.firstChild)
    this.firstShown = from
    this.updateEarlier()
    this.el.scrollTop += this.el.scrollHeight - before
  }

  private updateEarlier(): void {
    this.earlier.hidden = this.firstShown === 0
    this.earlier.textContent = `Show earlier events (${this.firstShown} more)`
  }
}
