// A remote entity handler in TypeScript with nothing but Node's standard library: it
// receives entityd's webhook wakes, verifies their Ed25519 signature against the
// server's JWKS, claims the wake for a write token, answers each inbox message with a
// reply written straight to the entity's stream as State Protocol events (a run, its
// text and the text's delta, as Electric's runtime writes a reply and Electric's UI
// shows it), and finishes the wake with the offset it handled. The same code works
// against Electric Agents.
//
// Run it (Node >= 22.6 strips the types itself):
//   ENTITYD_URL=http://localhost:4437 node --experimental-strip-types handler.ts
// then subscribe it to a type (see README.md next to this file).
import { createServer, type IncomingMessage, type Server } from "node:http"
import { createPublicKey, verify, type KeyObject } from "node:crypto"

export interface HandlerOptions {
  /** where entityd is, e.g. http://localhost:4437 */
  entityd: string
  /** the port to listen on (0: any free one) */
  port?: number
  /** what to answer a message with */
  reply?: (payload: unknown, from: string) => string
  /** called when a wake has been handled (for tests and logs) */
  onWakeDone?: (wake: Wake, handled: number) => void
}

/** The fields of a webhook wake this handler uses (Electric's names). */
export interface Wake {
  wakeId: string
  epoch: number
  streamPath: string
  callback: string
  claimToken: string
  streams: Array<{ path: string; acked_offset: string; offset: string }>
  entity: { url: string; type: string; status: string }
}

interface StreamEvent {
  type: string
  key: string
  value?: { payload?: unknown; from?: string }
  headers?: { operation?: string }
}

export async function startHandler(opts: HandlerOptions): Promise<{ url: string; close: () => Promise<void> }> {
  const reply = opts.reply ?? ((payload) => `echo: ${JSON.stringify(payload)}`)
  const keys = new Map<string, KeyObject>()

  async function publicKey(kid: string): Promise<KeyObject | undefined> {
    if (!keys.has(kid)) {
      const res = await fetch(`${opts.entityd}/__ds/jwks.json`)
      const jwks = (await res.json()) as { keys: Array<{ kid: string; kty: string; crv: string; x: string }> }
      for (const k of jwks.keys) keys.set(k.kid, createPublicKey({ key: { kty: k.kty, crv: k.crv, x: k.x }, format: "jwk" }))
    }
    return keys.get(kid)
  }

  // Webhook-Signature: t=<unix seconds>,kid=<key id>,ed25519=<base64url signature of "<t>.<body>">
  async function signedBy(header: string | undefined, body: Buffer): Promise<boolean> {
    const parts = Object.fromEntries((header ?? "").split(",").map((p) => p.split("=", 2) as [string, string]))
    if (!parts.t || !parts.kid || !parts.ed25519) return false
    if (Math.abs(Date.now() / 1000 - Number(parts.t)) > 300) return false // replayed or skewed
    const key = await publicKey(parts.kid)
    if (!key) return false
    return verify(null, Buffer.concat([Buffer.from(`${parts.t}.`), body]), key, Buffer.from(parts.ed25519, "base64url"))
  }

  async function call(url: string, token: string, body: unknown): Promise<any> {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    })
    if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`)
    return res.json()
  }

  async function handle(wake: Wake): Promise<void> {
    // 1. claim: a write token for the entity's stream, good while this wake lasts
    const { writeToken } = await call(wake.callback, wake.claimToken, { epoch: wake.epoch, wakeId: wake.wakeId })
    // 2. read what came since the last acknowledged offset
    const from = wake.streams.find((s) => `/${s.path.replace(/^\//, "")}` === wake.streamPath)?.acked_offset ?? "-1"
    const res = await fetch(`${opts.entityd}${wake.streamPath}?offset=${encodeURIComponent(from)}`)
    const events = (await res.json()) as StreamEvent[]
    const handledTo = res.headers.get("stream-next-offset")!
    // 3. answer each new inbox message with a reply, written with the write token: a run
    //    (keyed by the message, so a redelivered wake writes the same rows again), one
    //    text in it whose content is one text_delta, then the text and the run completed
    let handled = 0
    for (const ev of events) {
      if (ev.type !== "inbox" || ev.headers?.operation !== "insert") continue
      const run = `run-reply-${ev.key}`
      const msg = `${run}:msg`
      const row = (type: string, key: string, operation: string, value: unknown) => ({ type, key, value, headers: { operation } })
      const out = await fetch(`${opts.entityd}${wake.streamPath}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${writeToken}` },
        body: JSON.stringify([
          row("run", run, "insert", { status: "started" }),
          row("text", msg, "insert", { status: "streaming", run_id: run }),
          row("text_delta", `${msg}:0`, "insert", { text_id: msg, run_id: run, delta: reply(ev.value?.payload, ev.value?.from ?? "") }),
          row("text", msg, "update", { status: "completed", run_id: run }),
          row("run", run, "update", { status: "completed", finish_reason: "stop" }),
        ]),
      })
      if (!out.ok) throw new Error(`write: ${out.status} ${await out.text()}`)
      handled++
    }
    // 4. done: acknowledge what was read (the replies written after it wake us once more,
    //    and find no inbox message then)
    await call(wake.callback, wake.claimToken, {
      epoch: wake.epoch,
      acks: [{ path: wake.streamPath, offset: handledTo }],
      done: true,
    })
    opts.onWakeDone?.(wake, handled)
  }

  const server: Server = createServer(async (req: IncomingMessage, res) => {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    const body = Buffer.concat(chunks)
    if (req.method !== "POST" || !(await signedBy(req.headers["webhook-signature"] as string | undefined, body))) {
      res.writeHead(401).end()
      return
    }
    const wake = JSON.parse(body.toString("utf8")) as Wake
    res.writeHead(200, { "content-type": "application/json" }).end("{}") // accepted: work follows
    handle(wake).catch((err) => console.error(`wake ${wake.wakeId}:`, err)) // unfinished: entityd wakes again
  })
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, "127.0.0.1", resolve))
  const addr = server.address() as { port: number }
  return {
    url: `http://127.0.0.1:${addr.port}/wake`,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }),
  }
}

// Started directly: listen on $PORT (default 8080).
if (import.meta.url === `file://${process.argv[1]}`) {
  const entityd = process.env.ENTITYD_URL ?? "http://localhost:4437"
  startHandler({ entityd, port: Number(process.env.PORT ?? 8080) }).then(({ url }) =>
    console.log(`handler listening at ${url}; subscribe it with PUT ${entityd}/__ds/subscriptions/<id>`),
  )
}
