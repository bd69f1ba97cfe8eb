// The slash-command grammar of the composer_input specification (§2.1, §2.2), the same
// rules as the server's validator and inbox.SerializeComposerInput. Offsets are UTF-16
// code units, which is what JavaScript string indices already are. \s in a JavaScript
// regular expression is exactly the whitespace class the grammar names.

export type ComposerNode = {
  kind: string
  start: number
  end: number
  raw: string
  name?: string
  unknown?: boolean
  [extra: string]: unknown
}

export type ComposerInputPayload = { source: string; nodes?: ComposerNode[] }

const NAME = /^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/

/** validCommandName: a lowercase kebab-case command name, without the slash. */
export function validCommandName(name: string): boolean {
  return NAME.test(name)
}

/** commandTokens finds every complete "/name" token: at the start or after whitespace,
 * followed by whitespace or the end. */
export function commandTokens(source: string): { start: number; end: number; name: string }[] {
  const out: { start: number; end: number; name: string }[] = []
  const re = /(^|\s)\/([a-z][a-z0-9]*(?:-[a-z0-9]+)*)(?=\s|$)/g
  for (let m = re.exec(source); m !== null; m = re.exec(source)) {
    const start = m.index + m[1].length
    out.push({ start, end: start + 1 + m[2].length, name: m[2] })
  }
  return out
}

/** Trigger is an open "/query" at the caret: what the suggestions filter by. */
export type Trigger = { from: number; to: number; query: string }

/** detectTrigger looks at the text before the caret: it must end with "/" and the
 * characters a name is typed with, and the slash must start a token. */
export function detectTrigger(before: string): Trigger | null {
  const m = /(^|\s)\/([A-Za-z0-9_-]*)$/.exec(before)
  if (!m) return null
  const query = m[2]
  return { from: before.length - query.length - 1, to: before.length, query }
}

/** serializeComposerInput is the regex producer (§2.2): one slash_command node per
 * complete token, flagged unknown when the entity has no such command; no nodes key
 * when there are none. */
export function serializeComposerInput(source: string, known: (name: string) => boolean): ComposerInputPayload {
  const nodes = commandTokens(source).map((t) => commandNode(t.start, t.name, known))
  return nodes.length > 0 ? { source, nodes } : { source }
}

export function commandNode(start: number, name: string, known: (name: string) => boolean): ComposerNode {
  const node: ComposerNode = { kind: "slash_command", start, end: start + 1 + name.length, raw: "/" + name, name }
  if (!known(name)) node.unknown = true
  return node
}

/** mergeNodes joins the editor's chip nodes with the regex producer's, as the desktop
 * composer does, sorted by start: a typed token that overlaps a chip is dropped, the
 * chip being what the person chose (a chip followed directly by text makes a longer
 * token, e.g. "/summarizex", that would overlap it and be refused). */
export function mergeNodes(chips: ComposerNode[], regex: ComposerNode[]): ComposerNode[] {
  const free = regex.filter((n) => !chips.some((c) => n.start < c.end && c.start < n.end || (n.start === c.start && n.end === c.end)))
  return [...chips, ...free].sort((a, b) => a.start - b.start)
}
