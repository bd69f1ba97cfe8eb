// Calls to the entityd API with the tab's credentials. In jwt mode the token is entered
// once per tab (sessionStorage: it leaves with the tab); in dev mode there is none.

import { trackedFetch } from "./connection"

const TOKEN_KEY = "entityd.console.token"

export type ErrorDetail = { path: string; message: string }

export class ApiError extends Error {
  constructor(public status: number, public code: string, message: string, public details: ErrorDetail[] = []) {
    super(message)
  }
}

export function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY)
}

export function setToken(t: string | null): void {
  if (t) sessionStorage.setItem(TOKEN_KEY, t)
  else sessionStorage.removeItem(TOKEN_KEY)
}

/** authHeaders are the headers every request carries; the live clients call it per request. */
export function authHeaders(): Record<string, string> {
  const t = token()
  return t ? { Authorization: `Bearer ${t}` } : {}
}

let onUnauthorized: (() => void) | null = null

/** whenUnauthorized registers what to do on a 401: ask for a token. */
export function whenUnauthorized(f: () => void): void {
  onUnauthorized = f
}

export function unauthorized(): void {
  onUnauthorized?.()
}

export async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { ...authHeaders() }
  if (body !== undefined) headers["content-type"] = "application/json"
  const res = await trackedFetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await res.text()
  let parsed: any = null
  if (text) {
    try {
      parsed = JSON.parse(text)
    } catch {
      parsed = null
    }
  }
  if (!res.ok) {
    if (res.status === 401) unauthorized()
    const e = parsed?.error
    throw new ApiError(res.status, e?.code ?? "HTTP_" + res.status, e?.message ?? (text || res.statusText), e?.details ?? [])
  }
  return parsed as T
}

/** entityPath is /_electric/entities/<type>/<id>, each part escaped. */
export function entityPath(type: string, id: string): string {
  return `/_electric/entities/${encodeURIComponent(type)}/${encodeURIComponent(id)}`
}

/** streamURL is an absolute URL for a stream path, as the live clients want. */
export function streamURL(path: string): string {
  return new URL(path, location.origin).toString()
}
