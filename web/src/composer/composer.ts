// The composer: a WAI-ARIA combobox (a contenteditable text box named "Message" that
// owns a listbox of slash-command suggestions), chips for inserted commands, a mode
// selector, and sending as composer_input with UTF-16 spans. What is sent appears in the
// timeline from the stream, never from a local echo.

import { h, clear, announce, measure } from "../dom"
import { api, ApiError, entityPath, type ErrorDetail } from "../http"
import { argumentHint, filterCommands, type Command } from "./commands"
import { commandNode, detectTrigger, mergeNodes, serializeComposerInput, type ComposerInputPayload, type Trigger } from "./grammar"
import { CHIP_ATTR, replaceBeforeCaret, serialize, textAfter, textBeforeCaret } from "./editor"

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

  constructor(private type: string, private id: string) {
    this.input = h("div", {
      id: "composer-input", class: "composer-input", role: "combobox", contenteditable: "true",
      "aria-label": "Message", "aria-autocomplete": "list", "aria-haspopup": "listbox",
      "aria-expanded": "false", "aria-controls": "composer-suggestions", "aria-describedby": "composer-help composer-errors",
      spellcheck: "false",
    })
    this.list = h("ul", { id: "composer-suggestions", role: "listbox", "aria-label": "Slash commands", class: "suggestions", hidden: true })
    this.hint = h("div", { id: "composer-help", class: "composer-help" }, "Type / for commands. Ctrl+Enter sends.")
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
      h("div", { class: "composer-actions" }, h("label", { for: "composer-mode" }, "Mode"), this.mode, this.sendButton),
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
    this.hint.textContent = disabled ? why : "Type / for commands. Ctrl+Enter sends."
    if (disabled) this.close()
  }

  focus(): void {
    this.input.focus()
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
      // Enter is a new line; Ctrl/Cmd+Enter sends.
      e.preventDefault()
      document.execCommand("insertLineBreak")
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
      this.hint.textContent = "Type / for commands. Ctrl+Enter sends."
    }
  }

  private async send(): Promise<void> {
    if (this.sending) return // Ctrl+Enter again while the first is on its way
    const payload = this.payload()
    if (payload.source.trim() === "") return
    if (await this.post(payload)) {
      // what was typed while the message was on its way stays
      if (serialize(this.input).source === payload.source) clear(this.input)
      this.dismissed = null
      this.showArgumentHint()
    }
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
      if (err instanceof ApiError) this.showErrors(payload, err.details, `${err.status} ${err.code}: ${err.message}`)
      else this.showErrors(null, [], `Not sent: ${(err as Error).message}`)
      return false
    } finally {
      this.sending = false
      this.sendButton.disabled = this.disabled
    }
  }

  /** showErrors lists the server's details, each at the span of the node it names. */
  private showErrors(payload: unknown, details: ErrorDetail[], summary: string): void {
    clear(this.errors)
    this.input.removeAttribute("aria-invalid")
    if (!summary) return
    this.input.setAttribute("aria-invalid", "true")
    this.errors.appendChild(h("p", { class: "error-summary" }, summary))
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
