// FeedHub multiplexes reads over GET /_electric/feed: one session (one long-lived HTTP
// connection) per credential, however many streams and shapes are followed. fetch()
// answers with a real Response whose body is fed by the session's events, so the
// official clients (ShapeStream's fetchClient, @durable-streams/client's fetch) run on
// it unchanged. When the session is lost every read in it fails the way fetch fails (a
// TypeError; a body that was streaming ends, as when a server closes a response), so
// the clients' own retry and backoff take over; the next read opens a new session.

const FEED = "/_electric/feed"

/** NoFeed is thrown when the server has no feed (an older entityd): use plain fetch. */
export class NoFeed extends Error {}

type Read = {
  head: (r: Response) => void
  fail: (e: unknown) => void
  body?: ReadableStreamDefaultController<Uint8Array>
  posted?: Promise<unknown> // the POST that registers it (a cancel goes after it)
}

const nullBody = new Set([101, 103, 204, 205, 304])
const enc = new TextEncoder()

function lost(): TypeError {
  return new TypeError("Failed to fetch (the live feed closed)")
}

function abortError(): DOMException {
  return new DOMException("The operation was aborted.", "AbortError")
}

let seq = 0

/** Refused is the session's GET answered with an error: every read waiting for it gets it. */
class Refused {
  constructor(readonly status: number, readonly headers: [string, string][], readonly body: string) {}
  response(): Response {
    return new Response(nullBody.has(this.status) ? null : this.body, { status: this.status, headers: this.headers })
  }
}

/** Session is one open feed for one set of credentials. */
class Session {
  id = ""
  private reads = new Map<string, Read>()
  private ac = new AbortController()
  ready: Promise<void>
  closed = false

  constructor(private origin: string, private creds: Record<string, string>, private onClose: () => void) {
    this.ready = this.open()
  }

  private async open(): Promise<void> {
    let res: Response
    try {
      res = await fetch(this.origin + FEED, { headers: { ...this.creds, accept: "text/event-stream" }, cache: "no-store", signal: this.ac.signal })
    } catch (e) {
      this.close()
      throw lost()
    }
    if (res.status === 404 || res.status === 405) {
      this.close()
      throw new NoFeed("the server has no live feed")
    }
    if (!res.ok || !res.body) {
      // each read waiting gets the refusal as its own answer (a 401 asks for a token)
      const body = await res.text().catch(() => "")
      this.close()
      throw new Refused(res.status, [...res.headers], body)
    }
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
    let opened!: () => void
    const ready = new Promise<void>((r) => (opened = r))
    void this.pump(reader, opened)
    const gone = new Promise<void>((_, rej) => this.ac.signal.addEventListener("abort", () => rej(lost()), { once: true }))
    gone.catch(() => {})
    await Promise.race([ready, gone])
  }

  private async pump(reader: ReadableStreamDefaultReader<string>, opened: () => void): Promise<void> {
    let buf = ""
    try {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        buf += value
        let i: number
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, i)
          buf = buf.slice(i + 2)
          let name = "message"
          let data = ""
          for (const line of block.split("\n")) {
            if (line.startsWith("event: ")) name = line.slice(7)
            else if (line.startsWith("data: ")) data += line.slice(6)
          }
          if (!data) continue
          this.dispatch(name, JSON.parse(data), opened)
        }
      }
    } catch {
      // the connection failed: as if it had ended
    }
    this.close()
  }

  private dispatch(name: string, d: any, opened: () => void): void {
    if (name === "open") {
      this.id = d.session
      opened()
      return
    }
    const r = this.reads.get(d.id)
    if (!r) return
    switch (name) {
      case "head": {
        const headers = new Headers(d.headers)
        if (nullBody.has(d.status)) {
          this.reads.delete(d.id)
          r.head(new Response(null, { status: d.status, headers }))
          return
        }
        const body = new ReadableStream<Uint8Array>({
          start: (c) => void (r.body = c),
          cancel: () => this.cancel(d.id),
        })
        r.head(new Response(body, { status: d.status, headers }))
        return
      }
      case "body": {
        const bytes = typeof d.data === "string" ? enc.encode(d.data) : Uint8Array.from(atob(d.b64 ?? ""), (c) => c.charCodeAt(0))
        r.body?.enqueue(bytes)
        return
      }
      case "end":
        this.reads.delete(d.id)
        r.body?.close()
        return
      case "fail":
        this.reads.delete(d.id)
        this.failRead(r, lost())
        return
    }
  }

  private failRead(r: Read, e: unknown): void {
    if (r.body) {
      try {
        r.body.error(e)
      } catch {}
    } else r.fail(e)
  }

  /** cancel stops a read on the server (its reader went away). */
  private cancel(id: string): void {
    const r = this.reads.get(id)
    if (!r || this.closed) return
    this.reads.delete(id)
    const url = `${this.origin}${FEED}/${this.id}/requests/${encodeURIComponent(id)}`
    void Promise.resolve(r.posted)
      .catch(() => {})
      .then(() => fetch(url, { method: "DELETE", headers: this.creds }))
      .catch(() => {})
  }

  async fetch(path: string, headers: Record<string, string>, signal?: AbortSignal | null): Promise<Response> {
    await this.ready
    if (signal?.aborted) throw abortError()
    const id = `r${++seq}`
    const res = new Promise<Response>((head, fail) => this.reads.set(id, { head, fail }))
    const onAbort = () => {
      const r = this.reads.get(id)
      if (!r) return
      this.cancel(id)
      this.failRead(r, abortError())
    }
    signal?.addEventListener("abort", onAbort, { once: true })
    // the head may come before the POST's answer: the read is registered first
    const posting = fetch(`${this.origin}${FEED}/${this.id}/requests`, {
      method: "POST",
      headers: { ...this.creds, "content-type": "application/json" },
      body: JSON.stringify({ id, path, headers }),
    })
    const read = this.reads.get(id)
    if (read) read.posted = posting
    let post: Response
    try {
      post = await posting
    } catch {
      this.reads.delete(id)
      throw lost()
    }
    if (post.status !== 202) {
      this.reads.delete(id)
      if (post.status === 404) {
        this.close() // the server no longer knows the session
        throw lost()
      }
      return post // a refusal (429, 400) answers the read itself
    }
    return res
  }

  /** size is how many reads are in flight. */
  get size(): number {
    return this.reads.size
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    this.ac.abort()
    // A read not answered yet fails as fetch fails (the clients retry it with backoff);
    // one whose body is streaming ends, as a direct response does when the server
    // closes it — an errored body would stop the Durable Streams client for good, an
    // ended one makes it reconnect.
    for (const r of this.reads.values()) {
      if (!r.body) r.fail(lost())
      else {
        try {
          r.body.close()
        } catch {}
      }
    }
    this.reads.clear()
    this.onClose()
  }
}

/** FeedHub holds one session per credential set (the Authorization value). */
export class FeedHub {
  private sessions = new Map<string, Session>()

  constructor(private origin: string) {}

  /** fetch reads path (with its query) through the feed with creds. */
  async fetch(path: string, headers: Record<string, string>, creds: Record<string, string>, signal?: AbortSignal | null): Promise<Response> {
    const key = JSON.stringify(creds)
    let s = this.sessions.get(key)
    if (!s || s.closed) {
      const fresh: Session = new Session(this.origin, creds, () => {
        if (this.sessions.get(key) === fresh) this.sessions.delete(key)
      })
      s = fresh
      this.sessions.set(key, s)
    }
    try {
      return await s.fetch(path, headers, signal)
    } catch (e) {
      if (e instanceof Refused) return e.response()
      throw e
    }
  }

  /** close ends every session. */
  close(): void {
    for (const s of [...this.sessions.values()]) s.close()
  }
}

/** splitInit separates a fetch's credentials from the headers a read may send. */
export function splitInit(input: RequestInfo | URL, init?: RequestInit): { url: URL; headers: Record<string, string>; creds: Record<string, string>; signal?: AbortSignal | null; method: string } {
  const req = input instanceof Request ? input : null
  const url = new URL(req ? req.url : input.toString(), location.href)
  const all = new Headers(init?.headers ?? req?.headers)
  const headers: Record<string, string> = {}
  const creds: Record<string, string> = {}
  all.forEach((v, k) => {
    if (k === "authorization" || k === "electric-principal") creds[k] = v
    else if (k === "accept" || k === "if-none-match" || k === "last-event-id" || k === "cache-control") headers[k] = v
  })
  return { url, headers, creds, signal: init?.signal ?? req?.signal, method: (init?.method ?? req?.method ?? "GET").toUpperCase() }
}
