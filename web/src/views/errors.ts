// Errors in words: every failure the console shows is a sentence that says what happened
// (mapped from the server's code, or the HTTP status, or the network failing), followed
// by what the server said — its status, code and message, and each detail with its path.

import { h, clear } from "../dom"
import { ApiError, type ErrorDetail } from "../http"

/** Described is a failure as the console shows it. */
export type Described = {
  sentence: string // what happened, in words
  server: string // the server's own words ("422 SCHEMA_VALIDATION_FAILED: …"), or ""
  status: number // the HTTP status (0: no answer)
  code: string
  details: ErrorDetail[]
  offline: boolean // no answer at all: the server cannot be reached
}

const BY_CODE: Record<string, string> = {
  NOT_FOUND: "It does not exist (or you may not read it).",
  STREAM_NOT_FOUND: "The stream does not exist (or you may not read it).",
  UNAUTHORIZED: "The server wants a token: set one with the Token button.",
  FORBIDDEN: "Your token does not allow this.",
  NOT_RUNNING: "The entity is not running, so it cannot take this.",
  STREAM_CLOSED: "The entity's stream is closed: it was stopped or killed.",
  STREAM_GONE: "The entity's stream is gone.",
  INVALID_SIGNAL: "The entity cannot take this signal now.",
  SCHEMA_VALIDATION_FAILED: "The message does not match its schema.",
  UNKNOWN_MESSAGE_TYPE: "The entity's type has no such message type.",
  UNKNOWN_ENTITY_TYPE: "There is no such entity type.",
  UNKNOWN_EVENT_TYPE: "The entity's type does not declare this event type.",
  IDEMPOTENCY_KEY_REUSED: "This message's key was already used for a different message.",
  PAYLOAD_TOO_LARGE: "The message is too large for the server.",
  RATE_LIMITED: "Too many requests: wait a moment and try again.",
  QUOTA_EXCEEDED: "A quota is used up.",
  SERVICE_UNAVAILABLE: "The server is not available right now; try again shortly.",
  SERVER_STOPPING: "The server is shutting down; try again shortly.",
  REQUEST_TIMEOUT: "The server took too long to answer.",
  INTERNAL_SERVER_ERROR: "The server failed while doing this.",
  INVALID_REQUEST: "The server found the request malformed.",
  DUPLICATE_URL: "Something with this address already exists.",
  STREAM_EXISTS: "The stream already exists.",
}

function byStatus(status: number): string {
  if (status === 401) return BY_CODE.UNAUTHORIZED
  if (status === 403) return BY_CODE.FORBIDDEN
  if (status === 404) return BY_CODE.NOT_FOUND
  if (status === 408 || status === 504) return BY_CODE.REQUEST_TIMEOUT
  if (status === 409) return "It conflicts with the entity's current state."
  if (status === 410) return BY_CODE.STREAM_CLOSED
  if (status === 413) return BY_CODE.PAYLOAD_TOO_LARGE
  if (status === 422) return "The server could not accept what was sent."
  if (status === 429) return BY_CODE.RATE_LIMITED
  if (status === 502 || status === 503) return BY_CODE.SERVICE_UNAVAILABLE
  if (status >= 500) return BY_CODE.INTERNAL_SERVER_ERROR
  return "The server refused this."
}

/** describe turns any failure (an ApiError, a live client's FetchError, a network
 * failure) into words. A live client's error message embeds the URL and the raw body
 * ("HTTP Error 404 at http://…"); only its status and the server's code and message are
 * kept. */
export function describe(err: unknown): Described {
  if (err instanceof ApiError) {
    const sentence = BY_CODE[err.code] ?? byStatus(err.status)
    return { sentence, server: `${err.status} ${err.code}: ${err.message}`, status: err.status, code: err.code, details: err.details, offline: false }
  }
  const e = err as { status?: unknown; json?: any; message?: unknown; name?: unknown }
  if (typeof e?.status === "number") {
    const body = e.json?.error
    const code = typeof body?.code === "string" ? body.code : ""
    const message = typeof body?.message === "string" ? body.message : ""
    const sentence = BY_CODE[code] ?? byStatus(e.status)
    return { sentence, server: `${e.status}${code ? " " + code : ""}${message ? ": " + message : ""}`, status: e.status, code, details: [], offline: false }
  }
  // fetch rejects with a TypeError ("Failed to fetch") when no answer came at all
  if (err instanceof TypeError || /failed to fetch|networkerror|load failed/i.test(String(e?.message ?? ""))) {
    return { sentence: "The server cannot be reached.", server: "", status: 0, code: "", details: [], offline: true }
  }
  return { sentence: String(e?.message ?? err), server: "", status: 0, code: "", details: [], offline: false }
}

/** isNotFound says whether err means the entity is not there for the viewer: a 404 (it
 * does not exist) or a 403 (it may not be read). */
export function isNotFound(err: unknown): boolean {
  const s = (err as { status?: unknown })?.status
  return s === 404 || s === 403
}

/** showError puts a failure in box: what happened in words, then the server's status,
 * code and message, and each detail with its path, as the API reported them. null
 * clears it. */
export function showError(box: HTMLElement, err: unknown): void {
  clear(box)
  if (!err) return
  const d = describe(err)
  box.appendChild(h("p", { class: "error-summary" }, d.sentence))
  if (d.server) box.appendChild(h("p", { class: "error-code" }, d.server))
  if (d.details.length > 0) {
    box.appendChild(h("ul", { class: "error-details" },
      d.details.map((x) => h("li", {}, h("code", { class: "error-path" }, x.path || "/"), " ", x.message))))
  }
}

export function errorBox(): HTMLElement {
  return h("div", { class: "errors", role: "alert" })
}
