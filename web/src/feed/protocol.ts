// The messages between a tab (client.ts) and the feed's SharedWorker (worker.ts), over
// the tab's MessagePort.

/** From a tab. */
export type TabMessage =
  | { t: "hello"; lock: string } // the tab holds this Web Lock for its life
  | { t: "fetch"; rid: number; path: string; headers: Record<string, string>; creds: Record<string, string> }
  | { t: "abort"; rid: number }
  | { t: "bye" } // pagehide: the tab is going

/** Failure kinds: an abort, a server without the feed, anything else (as fetch fails). */
export type FailKind = "abort" | "nofeed" | "network"

/** From the worker. */
export type WorkerMessage =
  | { t: "head"; rid: number; status: number; headers: [string, string][]; body: boolean }
  | { t: "body"; rid: number; chunk: Uint8Array }
  | { t: "end"; rid: number }
  | { t: "fail"; rid: number; kind: FailKind; message: string }
