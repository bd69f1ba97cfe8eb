// The entity's commands as the picker shows them: rows of the live slash-command
// collection (the server's effective view: dynamic layers over the static command).

export type CommandArgument = { name: string; type?: string; required?: boolean; description?: string }

export type Command = {
  key: string
  name: string
  description?: string | null
  arguments?: CommandArgument[] | null
  source?: string
  owner?: string | null
}

/** argumentHint renders a command's arguments the way the peers' pickers do: required
 * ones bare, optional ones in brackets, ": type" when the type is not string. */
export function argumentHint(cmd: Command): string {
  return (cmd.arguments ?? [])
    .map((a) => {
      const t = a.type && a.type !== "string" ? `: ${a.type}` : ""
      return a.required ? `<${a.name}${t}>` : `[${a.name}${t}]`
    })
    .join(" ")
}

/** filterCommands is a case-insensitive prefix match on the name, names first in
 * alphabetical order; at most limit rows. */
export function filterCommands(sorted: readonly Command[], query: string, limit: number): Command[] {
  const q = query.toLowerCase()
  const out: Command[] = []
  for (const c of sorted) {
    if (c.name.startsWith(q)) {
      out.push(c)
      if (out.length === limit) break
    }
  }
  return out
}
