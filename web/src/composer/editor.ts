// The composer's text box is a contenteditable element holding text and command chips
// (non-editable spans, deleted as a whole). This file turns its DOM into the composer
// source and finds the caret in it; offsets are UTF-16 code units, like the spans the
// server validates.

export const CHIP_ATTR = "data-command"

/** Walk appends the source of node's children: text as it is, a chip as "/name" (or as
 * chipText when given), a <br> as "\n", and a block (the <div> a browser may make on
 * Enter) on a new line. */
function walk(node: Node, out: { source: string; chips: { start: number; name: string; el: HTMLElement }[] }, chipText?: string): void {
  for (let c = node.firstChild; c; c = c.nextSibling) {
    if (c.nodeType === Node.TEXT_NODE) {
      out.source += (c as Text).data
    } else if (c instanceof HTMLElement) {
      const name = c.getAttribute(CHIP_ATTR)
      if (name !== null) {
        out.chips.push({ start: out.source.length, name, el: c })
        out.source += chipText ?? "/" + name
      } else if (c.tagName === "BR") {
        out.source += "\n"
      } else {
        const block = c.tagName === "DIV" || c.tagName === "P"
        if (block && out.source.length > 0 && !out.source.endsWith("\n")) out.source += "\n"
        walk(c, out, chipText)
      }
    }
  }
}

export type Serialized = { source: string; chips: { start: number; name: string; el: HTMLElement }[] }

export function serialize(root: Node, chipText?: string): Serialized {
  const out: Serialized = { source: "", chips: [] }
  walk(root, out, chipText)
  // The box's text ends with one newline more than it shows: a browser keeps a trailing
  // "\n" (or <br>) after the last line break so that the empty last line shows, and a
  // final newline alone shows nothing. The source is what shows. (A fragment before the
  // caret is cut mid-text and keeps all of its newlines.)
  if (root instanceof HTMLElement && out.source.endsWith("\n")) out.source = out.source.slice(0, -1)
  return out
}

/** caretRange is the collapsed selection when it lies inside root, else null. */
export function caretRange(root: HTMLElement): Range | null {
  const sel = document.getSelection()
  if (!sel || sel.rangeCount === 0) return null
  const r = sel.getRangeAt(0)
  if (!r.collapsed || !root.contains(r.startContainer)) return null
  return r
}

/** textBeforeCaret is the text from the start of root to the caret, for finding an open
 * "/query": a chip is one object replacement character there, so that the text right
 * after a chip is never taken for a command being typed. */
export function textBeforeCaret(root: HTMLElement): string | null {
  const r = caretRange(root)
  if (!r) return null
  const before = document.createRange()
  before.setStart(root, 0)
  before.setEnd(r.startContainer, r.startOffset)
  return serialize(before.cloneContents(), "\ufffc").source
}

export function makeChip(name: string): HTMLSpanElement {
  const chip = document.createElement("span")
  chip.className = "chip"
  chip.setAttribute(CHIP_ATTR, name)
  chip.contentEditable = "false"
  chip.textContent = "/" + name
  return chip
}

/** replaceBeforeCaret replaces the `length` characters before the caret (the typed
 * "/query") with a chip for name and a space, and puts the caret after the space. The
 * characters must be text (a "/query" is typed text): it walks back through text nodes
 * only, and gives up (null) at anything else rather than delete it. */
export function replaceBeforeCaret(root: HTMLElement, length: number, name: string): HTMLElement | null {
  const r = caretRange(root)
  if (!r || r.startContainer.nodeType !== Node.TEXT_NODE) return null
  const range = r.cloneRange()
  let node = r.startContainer as Text
  let need = length - r.startOffset
  while (need > 0) {
    const prev = node.previousSibling
    if (!prev || prev.nodeType !== Node.TEXT_NODE) return null
    node = prev as Text
    need -= node.data.length
  }
  range.setStart(node, need === 0 ? 0 : -need)
  range.deleteContents()
  const chip = makeChip(name)
  const space = document.createTextNode(" ")
  range.insertNode(space)
  range.insertNode(chip)
  const sel = document.getSelection()!
  const after = document.createRange()
  after.setStart(space, 1)
  after.collapse(true)
  sel.removeAllRanges()
  sel.addRange(after)
  root.normalize()
  return chip
}

/** textAfter is the text between a chip and the next chip or line break. */
export function textAfter(chip: HTMLElement): string {
  let s = ""
  for (let n = chip.nextSibling; n; n = n.nextSibling) {
    if (n.nodeType === Node.TEXT_NODE) {
      const t = (n as Text).data
      const nl = t.indexOf("\n")
      if (nl >= 0) return s + t.slice(0, nl)
      s += t
    } else break
  }
  return s
}
