// "Copy as curl": every action the console takes can be taken again from a shell. The
// command names the server this page talks to, the method, the path and the JSON body,
// each quoted for a POSIX shell; the token is left as $ENTITYD_TOKEN so that a copied
// command never carries a secret into a clipboard, a chat or a ticket.

import { h } from "./dom"
import { token } from "./http"

export type CurlCall = { method: string; path: string; body?: unknown }

/** shellQuote quotes s for a POSIX shell: single quotes, each ' written as '\'' */
export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`
}

/** curlFor is the curl command for one call of the entityd API from this page. */
export function curlFor(c: CurlCall): string {
  const parts = ["curl", "-sS"]
  if (c.method !== "GET") parts.push("-X", c.method)
  parts.push(shellQuote(new URL(c.path, location.origin).toString()))
  if (token()) parts.push("-H", `"Authorization: Bearer $ENTITYD_TOKEN"`)
  if (c.body !== undefined) parts.push("-H", shellQuote("content-type: application/json"), "--data-raw", shellQuote(JSON.stringify(c.body)))
  return parts.join(" ")
}

/** curlButton copies the command for what the action would send now (call is asked at
 * the click, so it follows what the form holds); the button says when it is copied. */
export function curlButton(call: () => CurlCall | null, label = "Copy as curl"): HTMLButtonElement {
  const b = h("button", { type: "button", class: "curl", title: "Copy this action as a curl command" }, label)
  b.addEventListener("click", async () => {
    const c = call()
    if (!c) return
    const text = curlFor(c)
    try {
      await navigator.clipboard.writeText(text)
      b.textContent = "Copied"
    } catch {
      // no clipboard (an insecure origin, or refused): show the command to copy by hand
      window.prompt("Copy this command:", text)
    }
    setTimeout(() => (b.textContent = label), 1500)
  })
  return b
}
