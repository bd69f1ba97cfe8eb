// Everything live in the console goes through the official clients: Electric shapes for
// the entity and type lists (@electric-sql/client), Durable Streams for an entity's
// timeline (@durable-streams/client), and StreamDB for its slash-command collection
// (@durable-streams/state). Each follow returns a function that stops it.

import { Shape, ShapeStream, type Row } from "@electric-sql/client"
import { stream, type JsonBatch } from "@durable-streams/client"
import { MaterializedState, isChangeEvent } from "@durable-streams/state"
import { authHeaders, streamURL, token, unauthorized } from "./http"
import { feedFetch } from "./feed/client"
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
    fetchClient: feedFetch,
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

/** followStream reads a JSON stream from the start (or from offset) and then live (SSE),
 * calling onBatch per batch with the events in stream order. */
export function followStream(
  path: string,
  onBatch: (events: readonly StreamEvent[], meta: JsonBatch<StreamEvent>) => void,
  onError: (err: Error) => void,
  offset = "-1",
): Stop {
  const ac = new AbortController()
  stream<StreamEvent>({
    url: streamURL(path),
    offset,
    live: "sse",
    json: true,
    headers: authHeaders(),
    signal: ac.signal,
    fetch: feedFetch,
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

/** followCommands materialises the entity's live slash-command collection (snapshot, then
 * every change) with the State Protocol's MaterializedState and calls onCommands with
 * all of them, sorted by name, at most once per frame. The server writes complete rows,
 * so an update replaces the row. */
export function followCommands(entityUrl: string, onCommands: (cmds: Command[]) => void, onError: (err: Error) => void): Stop {
  const state = new MaterializedState()
  let frame = 0
  let stopped = false
  let synced = false
  const emit = () => {
    frame = 0
    if (stopped) return
    const rows = [...state.getType("slash_command").values()] as Command[]
    rows.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    onCommands(rows)
  }
  const stop = followStream(`${entityUrl}/slash-commands`, (events, meta) => {
    for (const ev of events) {
      if (isChangeEvent(ev as never)) state.apply(ev as never)
      else if (ev.headers?.control === "reset") state.clear()
    }
    // Render once the snapshot is complete, then per frame as changes come.
    if (meta.upToDate) synced = true
    if (synced && frame === 0) frame = requestAnimationFrame(emit)
  }, onError)
  return () => {
    stopped = true
    cancelAnimationFrame(frame)
    stop()
  }
}
