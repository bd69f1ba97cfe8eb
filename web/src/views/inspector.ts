// The stream inspector: any JSON stream's events with their offsets, read from the start
// or from an offset, followed live or not, filtered by event type, and the read as curl.
// A State Protocol event carries headers.offset (the offset just after it); an item
// without one is shown with its batch's Stream-Next-Offset, marked as the batch's.

import { h, clear, formatTime } from "../dom"
import { followStream, type Stop, type StreamEvent } from "../live"
import { curlButton } from "../curl"
import { errorBox, showError } from "./errors"

// At most this many rows are in the page (the newest); the rest were read and let go.
export const MAX_ROWS = 500

// a long value starts folded (a page of them stays readable, and no box scrolls inside)
const FOLD_AT = 600
function value(text: string): HTMLElement {
  const pre = h("pre", { class: "inspect-value" }, text)
  if (text.length <= FOLD_AT) return pre
  return h("details", { class: "inspect-fold" }, h("summary", {}, `value (${text.length.toLocaleString()} characters)`), pre)
}

export function inspectorView(root: HTMLElement, query: URLSearchParams): Stop {
  const path = query.get("path") ?? ""
  clear(root)
  if (!path.startsWith("/")) {
    root.appendChild(h("div", { class: "inspector" },
      h("h1", {}, "Stream inspector"),
      h("p", {}, "Name a stream to inspect: ", h("code", {}, "/_electric/console/inspect?path=/<type>/<id>/main"), "."),
      h("p", {}, h("a", { href: "/_electric/console/entities", "data-link": "" }, "Back to the entities"))))
    return () => {}
  }

  let start = query.get("offset") || "-1"
  let resume = start // where a follow that was switched off picks up again
  let stop: Stop | null = null
  let read = 0
  let upToDate = false
  const seen = new Set<string>()

  const follow = h("input", { id: "inspect-follow", type: "checkbox", checked: query.get("live") !== "0" })
  const typeFilter = h("select", { id: "inspect-type" }, h("option", { value: "" }, "all types"))
  const offsetInput = h("input", { id: "inspect-offset", type: "text", autocomplete: "off", spellcheck: "false", placeholder: "-1 (the start)", value: start === "-1" ? "" : start })
  const errors = errorBox()
  const summary = h("p", { class: "muted", id: "inspect-summary", "aria-live": "polite" }, "Reading…")
  const rows = h("ol", { class: "inspect-rows", id: "inspect-rows", "aria-label": "Events" })
  const note = h("p", { class: "muted", id: "inspect-note" })

  root.appendChild(h("div", { class: "inspector" },
    h("h1", {}, "Stream inspector"),
    h("p", { class: "inspect-path" }, "Stream ", h("code", { id: "inspect-path" }, path)),
    h("div", { class: "panel inspect-controls" },
      h("div", { class: "row" },
        h("span", { class: "field inline" }, follow, h("label", { for: "inspect-follow" }, "Follow live")),
        h("span", { class: "field" }, h("label", { for: "inspect-type" }, "Event type"), typeFilter)),
      h("form", { class: "row inspect-jump", "aria-label": "Jump to an offset", onsubmit: (e: Event) => { e.preventDefault(); jump(offsetInput.value.trim() || "-1") } },
        h("label", { for: "inspect-offset" }, "Read from offset"), offsetInput,
        h("button", { type: "submit" }, "Read"),
        h("button", { type: "button", onclick: () => { offsetInput.value = ""; jump("-1") } }, "From the start"),
        curlButton(() => ({ method: "GET", path: `${path}?offset=${encodeURIComponent(start)}` })))),
    errors, summary,
    h("div", { class: "panel inspect-list" }, rows, note)))

  const applyFilter = (li: Element) => {
    const want = typeFilter.value
    ;(li as HTMLElement).hidden = want !== "" && li.getAttribute("data-type") !== want
  }
  typeFilter.addEventListener("change", () => {
    for (const li of rows.children) applyFilter(li)
    updateSummary()
  })

  const updateSummary = () => {
    const shown = rows.querySelectorAll("li:not([hidden])").length
    summary.textContent = `${read} event${read === 1 ? "" : "s"} read from offset ${start}` +
      (typeFilter.value ? `; ${shown} of type ${typeFilter.value} shown` : "") +
      (upToDate ? (follow.checked ? "; up to date, following live." : "; up to date (not following).") : "…")
    note.textContent = read > MAX_ROWS ? `Showing the last ${MAX_ROWS} of ${read} events read; read from a later offset to see others here.` : ""
  }

  const addType = (t: string) => {
    if (seen.has(t)) return
    seen.add(t)
    const keep = typeFilter.value
    const sorted = [...seen].sort()
    clear(typeFilter)
    typeFilter.appendChild(h("option", { value: "" }, "all types"))
    for (const s of sorted) typeFilter.appendChild(h("option", { value: s }, s))
    typeFilter.value = keep
  }

  const row = (ev: StreamEvent, batchOffset: string): HTMLElement => {
    const hd = (ev && typeof ev === "object" ? ev.headers : undefined) as (StreamEvent["headers"] & { offset?: string }) | undefined
    const type = typeof ev?.type === "string" ? ev.type : hd?.control ? `control:${hd.control}` : "(no type)"
    addType(type)
    const own = typeof hd?.offset === "string"
    const body = ev && typeof ev === "object" && ("value" in ev || "old_value" in ev)
      ? { ...(ev.value !== undefined ? { value: ev.value } : {}), ...(ev.old_value !== undefined ? { old_value: ev.old_value } : {}) }
      : ev
    const li = h("li", { class: "inspect-row", "data-type": type, "data-offset": own ? hd!.offset! : batchOffset },
      h("div", { class: "inspect-meta" },
        own
          ? h("code", { class: "inspect-offset", title: "The offset just after this event" }, hd!.offset!)
          : h("code", { class: "inspect-offset batch", title: "This item has no offset of its own: the offset after its batch" }, `batch → ${batchOffset}`),
        h("span", { class: "badge inspect-type" }, type),
        ev?.key !== undefined ? h("code", { class: "inspect-key" }, String(ev.key)) : null,
        hd?.operation ? h("span", { class: "muted" }, hd.operation) : null,
        hd?.timestamp ? h("time", { class: "muted", datetime: String(hd.timestamp) }, formatTime(hd.timestamp)) : null),
      value(JSON.stringify(body, null, 1)))
    applyFilter(li)
    return li
  }

  const begin = (from: string) => {
    stop?.()
    upToDate = false
    stop = followStream(path, (events, meta) => {
      showError(errors, null)
      const frag = document.createDocumentFragment()
      for (const ev of events) frag.appendChild(row(ev, meta.offset))
      rows.appendChild(frag)
      read += events.length
      while (rows.children.length > MAX_ROWS) rows.firstElementChild!.remove()
      resume = meta.offset
      upToDate = meta.upToDate
      if (meta.upToDate && !follow.checked) {
        stop?.()
        stop = null
      }
      updateSummary()
    }, (err) => {
      showError(errors, err)
      summary.textContent = `The read from offset ${start} failed.`
    }, from)
  }

  const jump = (from: string) => {
    start = from
    resume = from
    read = 0
    clear(rows)
    const q = new URLSearchParams({ path })
    if (from !== "-1") q.set("offset", from)
    history.replaceState(null, "", `${location.pathname}?${q}`)
    summary.textContent = "Reading…"
    begin(from)
  }

  follow.addEventListener("change", () => {
    if (follow.checked && !stop) begin(resume)
    else if (!follow.checked && upToDate) {
      stop?.()
      stop = null
    }
    updateSummary()
  })

  begin(start)
  return () => stop?.()
}
