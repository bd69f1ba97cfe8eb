import { h, clear } from "../dom"
import { ApiError } from "../http"

/** showError puts a failure in box: the server's code and message, and each detail with
 * its path, as the API reported them. */
export function showError(box: HTMLElement, err: unknown): void {
  clear(box)
  if (!err) return
  if (err instanceof ApiError) {
    box.appendChild(h("p", { class: "error-summary" }, `${err.status} ${err.code}: ${err.message}`))
    if (err.details.length > 0) {
      box.appendChild(h("ul", { class: "error-details" },
        err.details.map((d) => h("li", {}, h("code", { class: "error-path" }, d.path || "/"), " ", d.message))))
    }
  } else {
    box.appendChild(h("p", { class: "error-summary" }, (err as Error)?.message ?? String(err)))
  }
}

export function errorBox(): HTMLElement {
  return h("div", { class: "errors", role: "alert" })
}
