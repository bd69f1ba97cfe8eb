// The composer: a WAI-ARIA combobox (a contenteditable text box named "Message" that
// owns a listbox of slash-command suggestions), chips for inserted commands, a mode
// selector, and sending as composer_input with UTF-16 spans. Enter sends and Shift+Enter
// makes a new line (on a touch screen Enter makes a new line and the Send button sends).
// A message sent leaves the box at once and is handed to the timeline as an Outgoing:
// pending ("Sending…") until its inbox event arrives on the stream, or "Not sent" with a
// Retry that sends it again with the same idempotency key, so it is stored exactly once.

import { h, clear, announce, measure } from "../dom"
import { api, ApiError, entityPath, type ErrorDetail } from "../http"
import { curlButton } from "../curl"
import { describe } from "../views/errors"
import { argumentHint, filterCommands, type Command } from "./commands"
import { commandNode, detectTrigger, mergeNodes, serializeComposerInput, type ComposerInputPayload, type Trigger } from "./grammar"
import { CHIP_ATTR, makeChip, replaceBeforeCaret, serialize, textAfter, textBeforeCaret } from "./editor"

/** A message on its way: the timeline shows it as the viewer's own bubble and follows
 * its state (onChange) until its inbox event (the same key) arrives on the stream. */
export type Outgoing = {
  key: string // the idempotency key: the same on every retry
  payload: unknown
  mode: string
  state: "sending" | "sent" | "failed" | "discarded"
  reason?: string // why it was not sent, in words
  detail?: string // the server's own words
  retry(): void
  discard(): void
  onChange?: () => void
}

// A touch screen (no keyboard at hand): Enter makes a new line, the Send button sends,
// and the hint says nothing of keys.
const touch = () => typeof matchMedia === "function" && matchMedia("(pointer: coarse)").matches
const helpText = () => (touch() ? "Type / for commands." : "Type / for commands. Enter to send · Shift+Enter for a new line.")

const MAX_SUGGESTIONS = 50
const MODES = ["immediate", "queued", "paused", "steer"] as const
let seq = 0

// What was in an entity's composer when its view went away (navigation, a new token):
// the nodes themselves, chips included, put back when the view comes back in this tab.
const drafts = new Map<string, Node[]>()

export class Composer {
  readonly el: HTMLElement
  private input: HTMLDivElement
  private list: HTMLUListElement
  private hint: HTMLElement
  private errors: HTMLElement
  private mode: HTMLSelectElement
  private sendButton: HTMLButtonElement
  private json: HTMLTextAreaElement
  private commands: Command[] = []
  private byName = new Map<string, Command>()
  private shown: Command[] = []
  private active = -1
  private trigger: Trigger | null = null
  private dismissed: string | null = null // "from:query" of a trigger closed with Escape
  private disabled = false
  private sending = false
  // The idempotency key of the draft being sent: the same until the draft changes, so
  // sending again after a lost answer cannot store the message twice.
  private draftKey: string | null = null
  // messages are posted one after another, in the order they were sent
  private queue: Promise<void> = Promise.resolve()
  /** onOutgoing receives each message sent from the box, to show it while it is on its way. */
  onOutgoing: ((m: Outgoing) => void) | null = null

  constructor(private type: string, private id: string) {
    this.input = h("div", {
      id: "composer-input", class: "composer-input", role: "combobox", contenteditable: "true",
      "aria-label": "Message", "aria-autocomplete": "list", "aria-haspopup": "listbox",
      "aria-expanded": "false", "aria-controls": "composer-suggestions", "aria-describedby": "composer-help composer-errors",
      spellcheck: "false", tabindex: "0",
    })
    this.list = h("ul", { id: "composer-suggestions", role: "listbox", "aria-label": "Slash commands", class: "suggestions", hidden: true })
    this.hint = h("div", { id: "composer-help", class: "composer-help" }, helpText())
    this.errors = h("div", { id: "composer-errors", class: "composer-errors", role: "alert" })
    this.mode = h("select", { id: "composer-mode", "aria-label": "Mode" }, MODES.map((m) => h("option", { value: m }, m)))
    this.sendButton = h("button", { type: "button", class: "primary", onclick: () => void this.send() }, "Send")
    this.json = h("textarea", { id: "composer-json", rows: 8, "aria-label": "Payload (JSON)", spellcheck: "false" })
    const advanced = h("details", { class: "composer-advanced" },
      h("summary", {}, "Payload as JSON"),
      h("p", { class: "muted" }, "The composer_input this message would send. Edit it and send it as it is: the server validates it."),
      this.json,
      h("div", { class: "row" },
        h("button", { type: "button", onclick: () => { this.json.value = JSON.stringify(this.payload(), null, 2) } }, "Copy from the composer"),
        h("button", { type: "button", onclick: () => void this.sendJSON() }, "Send JSON")))
    this.el = h("section", { class: "composer", "aria-label": "Composer" },
      h("div", { class: "composer-box" }, this.input, this.list),
      this.hint,
      this.errors,
      h("div", { class: "composer-actions" }, h("label", { for: "composer-mode" }, "Mode"), this.mode,
        this.curl(), this.sendButton),
      advanced)
    this.input.addEventListener("keydown", (e) => this.onKey(e))
    this.input.addEventListener("input", (e) => {
      this.draftKey = null
      this.update(e.timeStamp)
    })
    this.input.addEventListener("paste", (e) => {
      e.preventDefault()
      document.execCommand("insertText", false, e.clipboardData?.getData("text/plain") ?? "")
    })
    this.mode.addEventListener("change", () => (this.draftKey = null))
    this.input.addEventListener("blur", () => this.close())
    document.addEventListener("selectionchange", this.onSelection)
    const draft = drafts.get(this.draftName)
    if (draft) {
      drafts.delete(this.draftName)
      this.input.append(...draft)
    }
  }

  private get draftName(): string {
    return `${this.type}/${this.id}`
  }

  private onSelection = () => {
    if (document.activeElement === this.input) this.update()
  }

  destroy(): void {
    document.removeEventListener("selectionchange", this.onSelection)
    if (this.input.firstChild) drafts.set(this.draftName, [...this.input.childNodes])
  }

  /** setCommands takes the live collection (sorted by name). */
  setCommands(cmds: Command[]): void {
    this.commands = cmds
    this.byName = new Map(cmds.map((c) => [c.name, c]))
    this.markChips()
    if (this.trigger) this.render(this.trigger)
  }

  setDisabled(disabled: boolean, why: string): void {
    this.disabled = disabled
    this.input.contentEditable = disabled ? "false" : "true"
    this.input.setAttribute("aria-disabled", String(disabled))
    this.sendButton.disabled = disabled
    this.mode.disabled = disabled
    this.el.classList.toggle("disabled", disabled)
    this.hint.textContent = disabled ? why : helpText()
    if (disabled) this.close()
  }

  focus(): void {
    this.input.focus()
  }

  /** insertCommand puts /name (a chip) in an empty box and the caret after it. */
  insertCommand(name: string): void {
    if (this.disabled) return
    clear(this.input)
    this.input.append(makeChip(name), document.createTextNode(" "))
    this.input.focus()
    const r = document.createRange()
    r.selectNodeContents(this.input)
    r.collapse(false)
    const sel = document.getSelection()
    sel?.removeAllRanges()
    sel?.addRange(r)
    this.markChips()
    this.showArgumentHint()
  }

  /** curl is the "copy as curl" of the message the box holds. */
  private curl(): HTMLButtonElement {
    const b = curlButton(() => {
      const payload = this.payload()
      return { method: "POST", path: `${entityPath(this.type, this.id)}/send`, body: { type: "composer_input", mode: this.mode.value, payload } }
    })
    b.title = "Copy this message as a curl command"
    return b
  }

  /** payload is the composer_input for what the box holds: a node per chip, plus the
   * regex producer's nodes for commands typed by hand (flagged unknown when the entity
   * does not have them). */
  payload(): ComposerInputPayload {
    const { source, chips } = serialize(this.input)
    const known = (name: string) => this.byName.has(name)
    const chipNodes = chips.map((c) => commandNode(c.start, c.name, known))
    const regex = serializeComposerInput(source, known).nodes ?? []
    const nodes = mergeNodes(chipNodes, regex)
    return nodes.length > 0 ? { source, nodes } : { source }
  }

  private update(inputAt?: number): void {
    if (this.disabled) return
    const before = textBeforeCaret(this.input)
    const t = before === null ? null : detectTrigger(before)
    if (!t || this.dismissed === `${t.from}:${t.query}`) {
      this.close()
    } else {
      this.render(t)
    }
    this.markChips()
    this.showArgumentHint()
    if (inputAt !== undefined) {
      void this.list.offsetHeight // lay out the update before measuring it
      measure("console:suggest", inputAt)
    }
  }

  private render(t: Trigger): void {
    this.trigger = t
    const prev = this.shown[this.active]?.name
    this.shown = filterCommands(this.commands, t.query, MAX_SUGGESTIONS)
    clear(this.list)
    if (this.shown.length === 0) {
      this.list.appendChild(h("li", { class: "empty", role: "option", "aria-disabled": "true", id: "sugg-none", "aria-selected": "false" },
        t.query ? `No command starts with /${t.query}; it is sent as text.` : "This entity has no commands."))
      this.active = -1
    } else {
      const keep = this.shown.findIndex((c) => c.name === prev)
      this.active = keep >= 0 ? keep : 0
      const frag = document.createDocumentFragment()
      this.shown.forEach((c, i) => frag.appendChild(this.option(c, i)))
      this.list.appendChild(frag)
    }
    this.list.hidden = false
    this.input.setAttribute("aria-expanded", "true")
    this.highlight()
  }

  private option(c: Command, i: number): HTMLLIElement {
    const hint = argumentHint(c)
    return h("li", {
      id: `sugg-${i}`, role: "option", "aria-selected": "false", class: "option",
      onmousedown: (e: MouseEvent) => { e.preventDefault(); this.active = i; this.insert() },
    },
      h("span", { class: "opt-name" }, "/" + c.name),
      hint ? h("span", { class: "opt-hint" }, " " + hint) : null,
      h("span", { class: `opt-source src-${c.source ?? "static"}` }, c.owner ? `${c.source} · ${c.owner}` : c.source ?? "static"),
      c.description ? h("span", { class: "opt-desc" }, c.description) : null)
  }

  private highlight(): void {
    this.list.querySelectorAll("[aria-selected=true]").forEach((el) => el.setAttribute("aria-selected", "false"))
    if (this.active < 0) {
      this.input.removeAttribute("aria-activedescendant")
      return
    }
    const el = this.list.children[this.active] as HTMLElement | undefined
    if (!el) return
    el.setAttribute("aria-selected", "true")
    this.input.setAttribute("aria-activedescendant", el.id)
    el.scrollIntoView({ block: "nearest" })
  }

  private close(): void {
    if (this.list.hidden) return
    this.list.hidden = true
    this.trigger = null
    this.active = -1
    this.input.setAttribute("aria-expanded", "false")
    this.input.removeAttribute("aria-activedescendant")
  }

  private insert(): void {
    const c = this.shown[this.active]
    const t = this.trigger
    if (!c || !t) return
    replaceBeforeCaret(this.input, t.to - t.from, c.name)
    this.close()
    this.markChips()
    this.showArgumentHint()
    announce(`Inserted /${c.name}${argumentHint(c) ? ", arguments " + argumentHint(c) : ""}`)
  }

  private onKey(e: KeyboardEvent): void {
    // Keys that confirm an input method's composition (CJK) belong to it, not to us.
    if (this.disabled || e.isComposing || e.keyCode === 229) return
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault()
      void this.send()
      return
    }
    const open = !this.list.hidden && this.shown.length > 0
    if (open) {
      switch (e.key) {
        case "ArrowDown":
          e.preventDefault()
          this.active = (this.active + 1) % this.shown.length
          this.highlight()
          return
        case "ArrowUp":
          e.preventDefault()
          this.active = (this.active - 1 + this.shown.length) % this.shown.length
          this.highlight()
          return
        case "Enter":
        case "Tab":
          e.preventDefault()
          this.insert()
          return
      }
    }
    if (e.key === "Escape" && !this.list.hidden) {
      e.preventDefault()
      if (this.trigger) this.dismissed = `${this.trigger.from}:${this.trigger.query}`
      this.close()
      return
    }
    if (e.key === "Enter") {
      // Enter sends; Shift+Enter is a new line (and Enter too on a touch screen, where
      // the Send button sends).
      e.preventDefault()
      if (e.shiftKey || e.altKey || touch()) document.execCommand("insertLineBreak")
      else void this.send()
    }
  }

  /** markChips flags chips of commands the entity does not have (any more), and shows a
   * chip's argument hint while nothing has been typed after it. */
  private markChips(): void {
    this.input.querySelectorAll<HTMLElement>(`[${CHIP_ATTR}]`).forEach((chip) => {
      const cmd = this.byName.get(chip.getAttribute(CHIP_ATTR)!)
      chip.classList.toggle("unknown", !cmd)
      chip.title = cmd ? cmd.description ?? "" : "This entity does not know this command; it is sent flagged unknown."
      const hint = cmd ? argumentHint(cmd) : ""
      if (hint && textAfter(chip).trim() === "") chip.setAttribute("data-hint", hint)
      else chip.removeAttribute("data-hint")
    })
  }

  private showArgumentHint(): void {
    if (this.disabled) return
    const { chips } = serialize(this.input)
    const last = chips[chips.length - 1]
    const cmd = last && this.byName.get(last.name)
    if (cmd) {
      const hint = argumentHint(cmd)
      this.hint.textContent = `/${cmd.name}${hint ? " " + hint : ""}${cmd.description ? " — " + cmd.description : ""}`
    } else {
      this.hint.textContent = helpText()
    }
  }

  /** send takes the box's message out of it and posts it; the timeline shows it
   * pending meanwhile (onOutgoing). */
  private async send(): Promise<void> {
    if (this.disabled) return
    const payload = this.payload()
    if (payload.source.trim() === "") return
    if (!this.onOutgoing) {
      // no timeline to show it: the box keeps the message until it is stored
      if (this.sending) return
      if (await this.post(payload)) {
        if (serialize(this.input).source === payload.source) clear(this.input)
        this.dismissed = null
        this.showArgumentHint()
      }
      return
    }
    this.showErrors(null, [], "")
    const m: Outgoing = {
      key: `console-${Date.now()}-${++seq}`,
      payload,
      mode: this.mode.value,
      state: "sending",
      // the bubble's buttons go away with its state: the focus goes back to the box
      retry: () => {
        if (m.state !== "failed") return
        this.setState(m, "sending")
        this.deliver(m, false)
        this.input.focus()
      },
      discard: () => {
        this.setState(m, "discarded")
        this.input.focus()
      },
    }
    clear(this.input)
    this.dismissed = null
    this.close()
    this.showArgumentHint()
    this.onOutgoing(m)
    this.deliver(m, true)
  }

  private setState(m: Outgoing, state: Outgoing["state"], reason?: string, detail?: string): void {
    m.state = state
    m.reason = reason
    m.detail = detail
    m.onChange?.()
  }

  /** deliver posts m after the messages sent before it. A refusal of a first send (the
   * message is wrong: 4xx) puts it back in the box with the server's details at their
   * spans; anything else (no answer, the server failing, a retry refused) leaves it in
   * the timeline as not sent, with Retry. */
  private deliver(m: Outgoing, first: boolean): void {
    this.queue = this.queue.then(async () => {
      if (m.state !== "sending") return
      try {
        await api("POST", `${entityPath(this.type, this.id)}/send`, { type: "composer_input", key: m.key, mode: m.mode, payload: m.payload })
        announce("Sent")
        this.setState(m, "sent")
      } catch (err) {
        const d = describe(err)
        const refused = err instanceof ApiError && err.status >= 400 && err.status < 500 && ![408, 425, 429].includes(err.status)
        if (refused && first) {
          this.setState(m, "discarded")
          if (serialize(this.input).source.trim() === "") this.restore(m.payload as ComposerInputPayload, m.mode)
          this.showErrors(m.payload, d.details, `Not sent: ${d.sentence}`, d.server)
          return
        }
        const reason = d.offline ? "The server cannot be reached. Retry sends it once it is back." : `Not sent: ${d.sentence}`
        this.setState(m, "failed", reason, d.server)
      }
    })
  }

  /** restore puts a message back in the box: its text, and a chip per command node. */
  private restore(p: ComposerInputPayload, mode: string): void {
    clear(this.input)
    let at = 0
    for (const n of p.nodes ?? []) {
      if (n.kind !== "slash_command" || !n.name || n.start < at || n.end > p.source.length) continue
      if (n.start > at) this.input.append(p.source.slice(at, n.start))
      this.input.append(makeChip(n.name!))
      at = n.end
    }
    if (at < p.source.length) this.input.append(p.source.slice(at))
    if (p.source.endsWith("\n")) this.input.append("\n")
    this.mode.value = mode
    this.markChips()
  }

  private async sendJSON(): Promise<void> {
    if (this.sending) return
    let payload: unknown
    try {
      payload = JSON.parse(this.json.value)
    } catch (err) {
      this.showErrors(null, [{ path: "", message: `Not JSON: ${(err as Error).message}` }], "The payload is not JSON")
      return
    }
    await this.post(payload)
  }

  private async post(payload: unknown): Promise<boolean> {
    this.showErrors(null, [], "")
    this.sending = true
    this.sendButton.disabled = true
    this.draftKey ??= `console-${Date.now()}-${++seq}`
    try {
      await api("POST", `${entityPath(this.type, this.id)}/send`, {
        type: "composer_input",
        key: this.draftKey,
        mode: this.mode.value,
        payload,
      })
      announce("Sent")
      this.draftKey = null
      return true
    } catch (err) {
      const d = describe(err)
      this.showErrors(payload, d.details, `Not sent: ${d.sentence}`, d.server)
      return false
    } finally {
      this.sending = false
      this.sendButton.disabled = this.disabled
    }
  }

  /** showErrors lists the server's details, each at the span of the node it names. */
  private showErrors(payload: unknown, details: ErrorDetail[], summary: string, server = ""): void {
    clear(this.errors)
    this.input.removeAttribute("aria-invalid")
    if (!summary) return
    this.input.setAttribute("aria-invalid", "true")
    this.errors.appendChild(h("p", { class: "error-summary" }, summary))
    if (server) this.errors.appendChild(h("p", { class: "error-code" }, server))
    const p = payload as ComposerInputPayload | null
    const list = h("ul", { class: "error-details" })
    for (const d of details) list.appendChild(h("li", {}, errorAtSpan(p, d)))
    if (details.length > 0) this.errors.appendChild(list)
  }
}

/** errorAtSpan renders one error detail; when it names a node of the payload, the
 * source is shown with that node's span marked. */
function errorAtSpan(p: ComposerInputPayload | null, d: ErrorDetail): Node {
  const m = /^\/nodes\/(\d+)/.exec(d.path)
  const node = m && Array.isArray(p?.nodes) ? p!.nodes![Number(m[1])] : undefined
  const label = h("code", { class: "error-path" }, d.path || "/")
  if (!node || typeof p?.source !== "string" || !Number.isInteger(node.start) || !Number.isInteger(node.end)) {
    return h("span", {}, label, " ", d.message)
  }
  const src = p.source
  const start = Math.max(0, Math.min(node.start, src.length))
  const end = Math.max(start, Math.min(node.end, src.length))
  return h("span", { class: "error-at-span" }, label, " ", d.message,
    h("span", { class: "error-source", "data-start": node.start, "data-end": node.end },
      src.slice(0, start), h("mark", { class: "error-span" }, src.slice(start, end) || "\u2038"), src.slice(end)),
    h("span", { class: "muted" }, ` (span ${node.start}–${node.end})`))
}
