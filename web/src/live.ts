// Everything live in the console goes through the official clients: Electric shapes for
// the entity and type lists (@electric-sql/client), Durable Streams for an entity's
// timeline (@durable-streams/client), and StreamDB for its slash-command collection
// (@durable-streams/state). Each follow returns a function that stops it.

import { Shape, ShapeStream, type Row } from "@electric-sql/client"
import { stream, type JsonBatch } from "@durable-streams/client"
import { createStateSchema, createStreamDB } from "@durable-streams/state/db"
import { authHeaders, streamURL, token, unauthorized } from "./http"
import type { Command } from "./composer/commands"

export type Stop = () => void

function statusOf(err: unknown): number | undefined {
  const s = (err as { status?: unknown })?.status
  return typeof s === "number" ? s : undefined
}

/** followShape materialises an Electric shape of entityd's own tables and calls onRows
 * with every version of it; onError gets the failures the client stops on (4xx). */
export function followShape(
  params: { table: string; where?: string; params?: string[]; columns?: string[] },
  onRows: (rows: Row[]) => void,
  onError: (err: Error) => void,
): Stop {
  const ac = new AbortController()
  const sp: Record<string, unknown> = { table: params.table }
  if (params.where) sp.where = params.where
  if (params.params) sp.params = params.params
  if (params.columns) sp.columns = params.columns
  const s = new ShapeStream({
    url: streamURL("/_electric/electric/v1/shape"),
    params: sp as never,
    headers: token() ? { Authorization: () => `Bearer ${token()}` } : undefined,
    signal: ac.signal,
    onError: (err: Error) => {
      if (statusOf(err) === 401) unauthorized()
      onError(err)
    },
  })
  const shape = new Shape(s)
  const unsub = shape.subscribe(({ rows }) => onRows(rows))
  shape.rows.then(onRows, () => {})
  return () => {
    unsub()
    s.unsubscribeAll()
    ac.abort()
  }
}

export type StreamEvent = {
  type?: string
  key?: string
  value?: any
  old_value?: any
  headers?: { operation?: string; txid?: string; timestamp?: string; control?: string }
}

/** followStream reads a JSON stream from the start and then live (SSE), calling onBatch
 * per batch with the events in stream order. */
export function followStream(
  path: string,
  onBatch: (events: readonly StreamEvent[], meta: JsonBatch<StreamEvent>) => void,
  onError: (err: Error) => void,
): Stop {
  const ac = new AbortController()
  stream<StreamEvent>({
    url: streamURL(path),
    offset: "-1",
    live: "sse",
    json: true,
    headers: authHeaders(),
    signal: ac.signal,
    warnOnHttp: false,
    onError: (err: Error) => {
      if (statusOf(err) === 401) unauthorized()
      onError(err)
    },
  }).then(
    (res) => {
      res.subscribeJson((batch) => onBatch(batch.items, batch))
    },
    (err: Error) => {
      if (!ac.signal.aborted) onError(err)
    },
  )
  return () => ac.abort()
}

// Rows of the slash-command collection are the server's; StreamDB asks every row for a
// Standard Schema, and this one accepts what the server validated.
const serverRow = { "~standard": { version: 1 as const, vendor: "entityd-console", validate: (value: unknown) => ({ value }) } }

/** followCommands keeps the entity's live slash-command collection in a StreamDB and
 * calls onCommands with all of them, sorted by name, after every change. */
export function followCommands(entityUrl: string, onCommands: (cmds: Command[]) => void, onError: (err: Error) => void): Stop {
  const db = createStreamDB({
    streamOptions: { url: streamURL(`${entityUrl}/slash-commands`), contentType: "application/json", headers: authHeaders(), warnOnHttp: false },
    live: "sse",
    state: createStateSchema({ slashCommands: { schema: serverRow, type: "slash_command", primaryKey: "key" } }),
  })
  const coll = db.collections.slashCommands
  const emit = () => {
    const rows = [...coll.toArray] as unknown as Command[]
    rows.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    onCommands(rows)
  }
  let stopped = false
  const sub = coll.subscribeChanges(() => emit())
  db.preload().then(
    () => {
      if (!stopped) emit()
    },
    (err: Error) => {
      if (stopped) return
      if (statusOf(err) === 401) unauthorized()
      onError(err)
    },
  )
  return () => {
    stopped = true
    sub.unsubscribe()
    db.close()
  }
}
