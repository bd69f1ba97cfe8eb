// feedFetch is the live clients' fetch: their live reads (those that wait for changes)
// go through the live feed (one connection for the whole browser when SharedWorker
// exists, one per tab otherwise); catch-up reads, everything else, and every read against
// a server without the feed go through plain fetch. Failures look like fetch's, so the clients' retries work as before; the
// connection banner (connection.ts) sees them like any request's.

import { FeedHub, NoFeed, splitInit } from "./hub"
import type { FailKind, TabMessage, WorkerMessage } from "./protocol"
import { track } from "../connection"

type Transport = {
  fetch(path: string, headers: Record<string, string>, creds: Record<string, string>, signal?: AbortSignal | null): Promise<Response>
}

function failure(kind: FailKind, message: string): Error {
  if (kind === "abort") return new DOMException("The operation was aborted.", "AbortError")
  if (kind === "nofeed") return new NoFeed(message)
  return new TypeError(`Failed to fetch (${message})`)
}

type Pending = {
  head: (r: Response) => void
  fail: (e: Error) => void
  body?: ReadableStreamDefaultController<Uint8Array>
}

/** WorkerTransport reads through the browser's one SharedWorker. */
class WorkerTransport implements Transport {
  private port: MessagePort
  private reads = new Map<number, Pending>()
  private seq = 0

  constructor(worker: SharedWorker) {
    this.port = worker.port
    this.port.onmessage = (m: MessageEvent<WorkerMessage>) => this.receive(m.data)
    this.port.start()
    const lock = `entityd-tab-${crypto.randomUUID?.() ?? Math.random().toString(36).slice(2)}`
    // held for the tab's life: the worker's request for it is granted when the tab closes
    void navigator.locks?.request(lock, () => {
      this.post({ t: "hello", lock })
      return new Promise<void>(() => {})
    })
    addEventListener("pagehide", (e) => {
      this.post({ t: "bye" })
      if (!e.persisted) return
      // kept in the back/forward cache: its reads were dropped, so start afresh
      addEventListener("pageshow", () => location.reload(), { once: true })
    })
  }

  private post(m: TabMessage): void {
    this.port.postMessage(m)
  }

  private receive(m: WorkerMessage): void {
    const p = this.reads.get(m.rid)
    if (!p) return
    switch (m.t) {
      case "head": {
        const headers = new Headers(m.headers)
        if (!m.body) {
          p.head(new Response(null, { status: m.status, headers }))
          return
        }
        const body = new ReadableStream<Uint8Array>({
          start: (c) => void (p.body = c),
          cancel: () => {
            this.reads.delete(m.rid)
            this.post({ t: "abort", rid: m.rid })
          },
        })
        p.head(new Response(body, { status: m.status, headers }))
        return
      }
      case "body":
        p.body?.enqueue(m.chunk)
        return
      case "end":
        this.reads.delete(m.rid)
        p.body?.close()
        return
      case "fail": {
        this.reads.delete(m.rid)
        const e = failure(m.kind, m.message)
        if (p.body) {
          try {
            p.body.error(e)
          } catch {}
        } else p.fail(e)
        return
      }
    }
  }

  fetch(path: string, headers: Record<string, string>, creds: Record<string, string>, signal?: AbortSignal | null): Promise<Response> {
    if (signal?.aborted) return Promise.reject(failure("abort", ""))
    const rid = ++this.seq
    return new Promise<Response>((head, fail) => {
      const p: Pending = { head, fail }
      this.reads.set(rid, p)
      signal?.addEventListener(
        "abort",
        () => {
          if (!this.reads.delete(rid)) return
          this.post({ t: "abort", rid })
          const e = failure("abort", "")
          if (p.body) {
            try {
              p.body.error(e)
            } catch {}
          } else fail(e)
        },
        { once: true },
      )
      this.post({ t: "fetch", rid, path, headers, creds })
    })
  }
}

// the worker's file with its build's hash (build.mjs): a new build, a new worker
declare const __FEED_WORKER__: string

let transport: Transport | null = null
let noFeed = false

function pick(): Transport {
  if (transport) return transport
  if (typeof SharedWorker !== "undefined") {
    try {
      transport = new WorkerTransport(new SharedWorker(new URL(__FEED_WORKER__, import.meta.url), { name: "entityd-feed" }))
      return transport
    } catch {
      // blocked (a policy, a private window): one feed per tab
    }
  }
  transport = new FeedHub(location.origin)
  return transport
}

/** feedMode says how live reads travel, for tests and the curious: worker, page or plain. */
export function feedMode(): "worker" | "page" | "plain" {
  if (noFeed || !transport) return "plain"
  return transport instanceof WorkerTransport ? "worker" : "page"
}

/** waits says whether a read is one that waits for changes (a live long-poll or SSE read:
 * `live` is set and not "false", for both the Durable Streams and Electric clients).
 * Only those hold a connection; a catch-up read answers at once, so it goes straight
 * out and a view's first render never waits for the worker and the feed's session. */
function waits(url: URL): boolean {
  const live = url.searchParams.get("live")
  return live !== null && live !== "false"
}

const viaFeed: typeof fetch = async (input, init) => {
  const { url, headers, creds, signal, method } = splitInit(input, init)
  if (noFeed || method !== "GET" || url.origin !== location.origin || !waits(url)) return fetch(input, init)
  try {
    return await pick().fetch(url.pathname + url.search, headers, creds, signal)
  } catch (e) {
    if (e instanceof NoFeed) {
      noFeed = true // an older server: read directly from now on
      return fetch(input, init)
    }
    throw e
  }
}

export const feedFetch: typeof fetch = track(viaFeed)

// Start the shared worker (or join the running one) as the page loads, while the view's
// first API calls are on their way, rather than at its first live read.
if (typeof SharedWorker !== "undefined") pick()
