// Whether the server is reachable, as the console's requests see it: every request (the
// API calls through trackedFetch, the live clients' reads through the live feed's
// feedFetch, also tracked) marks the connection lost on a network error — the feed's
// session lost included — or a 502/503/504, and found again on any answer.
// The live clients retry by themselves with backoff; this only tells the person.

type Listener = (online: boolean) => void

let online = true
const listeners = new Set<Listener>()

function set(v: boolean): void {
  if (v === online) return
  online = v
  for (const l of listeners) l(v)
}

export function onConnectionChange(l: Listener): void {
  listeners.add(l)
}

/** track wraps a fetch so that its outcomes tell the banner whether the server is there. */
export function track(f: typeof fetch): typeof fetch {
  return async (input, init) => {
    try {
      const res = await f(input, init)
      set(!(res.status === 502 || res.status === 503 || res.status === 504))
      return res
    } catch (err) {
      // An abort is the console leaving a view, not the server going away.
      if (!(err instanceof DOMException && err.name === "AbortError")) set(false)
      throw err
    }
  }
}

export const trackedFetch: typeof fetch = async (input, init) => {
  try {
    const res = await fetch(input, init)
    set(!(res.status === 502 || res.status === 503 || res.status === 504))
    return res
  } catch (err) {
    // An abort is the console leaving a view, not the server going away.
    if (!(err instanceof DOMException && err.name === "AbortError")) set(false)
    throw err
  }
}
