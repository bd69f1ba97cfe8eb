// The feed's SharedWorker: one FeedHub (one live connection per credential) for every
// tab of the browser. Each tab talks to it over its MessagePort (protocol.ts); a tab
// that goes away — its Web Lock is released, or it says bye on pagehide — has its reads
// cancelled.

import { FeedHub, NoFeed } from "./hub"
import type { FailKind, TabMessage, WorkerMessage } from "./protocol"

// the console typechecks against the DOM library; this is the part of a
// SharedWorkerGlobalScope the worker uses
declare const self: { location: Location; onconnect: ((ev: MessageEvent) => void) | null }

const hub = new FeedHub(self.location.origin)

function kindOf(e: unknown): FailKind {
  if (e instanceof NoFeed) return "nofeed"
  if (e instanceof DOMException && e.name === "AbortError") return "abort"
  return "network"
}

self.onconnect = (ev: MessageEvent) => {
  const port = ev.ports[0]
  const reads = new Map<number, AbortController>()
  let gone = false
  const send = (m: WorkerMessage, transfer: Transferable[] = []) => {
    if (!gone) port.postMessage(m, transfer)
  }
  const drop = () => {
    if (gone) return
    gone = true
    for (const ac of reads.values()) ac.abort()
    reads.clear()
    port.close()
  }
  const read = async (rid: number, path: string, headers: Record<string, string>, creds: Record<string, string>) => {
    const ac = new AbortController()
    reads.set(rid, ac)
    try {
      const res = await hub.fetch(path, headers, creds, ac.signal)
      send({ t: "head", rid, status: res.status, headers: [...res.headers], body: res.body !== null })
      if (res.body) {
        const reader = res.body.getReader()
        ac.signal.addEventListener("abort", () => void reader.cancel().catch(() => {}), { once: true })
        for (;;) {
          const { value, done } = await reader.read()
          if (done) break
          send({ t: "body", rid, chunk: value }, [value.buffer])
        }
      }
      send({ t: "end", rid })
    } catch (e) {
      send({ t: "fail", rid, kind: kindOf(e), message: String((e as Error)?.message ?? e) })
    } finally {
      reads.delete(rid)
    }
  }
  port.onmessage = (m: MessageEvent<TabMessage>) => {
    const msg = m.data
    switch (msg.t) {
      case "hello":
        // granted only once the tab has let go of it: the tab is closed
        void navigator.locks?.request(msg.lock, () => drop())
        return
      case "fetch":
        void read(msg.rid, msg.path, msg.headers, msg.creds)
        return
      case "abort":
        reads.get(msg.rid)?.abort()
        return
      case "bye":
        drop()
        return
    }
  }
  port.start()
}
