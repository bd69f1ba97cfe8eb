// The timeline's list: every event of the stream is kept, the newest ones are rendered,
// and earlier ones are rendered on demand (a button, or scrolling to the top), so that a
// long stream opens in the time of what a person can see.

import { h } from "../dom"
import type { StreamEvent } from "../live"
import { renderEvent } from "./timeline"

const PAGE = 200

export class TimelineList {
  readonly el: HTMLElement
  private list = h("ol", { class: "timeline" })
  private earlier: HTMLButtonElement
  private events: StreamEvent[] = []
  private firstShown = 0 // index in events of the first rendered event

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
    return this.events.length - this.firstShown
  }

  /** hold keeps events of the catch-up read (which may come in many batches) without
   * rendering them; showHeld then renders the newest page of them. */
  hold(events: readonly StreamEvent[]): void {
    for (const ev of events) if (!ev.headers?.control) this.events.push(ev)
  }

  showHeld(): void {
    this.firstShown = Math.max(0, this.events.length - PAGE)
    const frag = document.createDocumentFragment()
    for (let i = this.firstShown; i < this.events.length; i++) frag.appendChild(renderEvent(this.events[i]))
    this.list.appendChild(frag)
    this.updateEarlier()
    this.el.scrollTop = this.el.scrollHeight
  }

  /** append adds live events at the end, following them when the view was at the end. */
  append(events: readonly StreamEvent[]): void {
    const fresh = events.filter((ev) => !ev.headers?.control)
    if (fresh.length === 0) return
    const nearBottom = this.el.scrollTop + this.el.clientHeight >= this.el.scrollHeight - 40
    const start = this.events.length
    this.events.push(...fresh)
    const frag = document.createDocumentFragment()
    for (let i = start; i < this.events.length; i++) frag.appendChild(renderEvent(this.events[i]))
    this.list.appendChild(frag)
    if (nearBottom) this.el.scrollTop = this.el.scrollHeight
  }

  /** showEarlier renders the page before the first rendered event, keeping the view where it was. */
  showEarlier(): void {
    if (this.firstShown === 0) return
    const from = Math.max(0, this.firstShown - PAGE)
    const frag = document.createDocumentFragment()
    for (let i = from; i < this.firstShown; i++) frag.appendChild(renderEvent(this.events[i]))
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
