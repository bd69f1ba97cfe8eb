// Client-side routes under /_electric/console/. The server answers index.html for every
// path there, so deep links and reloads land on the same view.

export const BASE = "/_electric/console"

let onRoute: () => void = () => {}

export function startRouter(render: () => void): void {
  onRoute = render
  window.addEventListener("popstate", render)
  document.addEventListener("click", (e) => {
    const a = (e.target as Element | null)?.closest?.("a[data-link]") as HTMLAnchorElement | null
    if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return
    e.preventDefault()
    navigate(a.getAttribute("href")!)
  })
  render()
}

export function navigate(href: string): void {
  history.pushState(null, "", href)
  onRoute()
}

export type Route =
  | { view: "entities"; query: URLSearchParams }
  | { view: "types" }
  | { view: "entity"; type: string; id: string }
  | { view: "inspect"; query: URLSearchParams }
  | { view: "missing"; path: string }

export function currentRoute(): Route {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : location.pathname
  let parts: string[]
  try {
    parts = path.split("/").filter(Boolean).map(decodeURIComponent)
  } catch {
    return { view: "missing", path } // a malformed %-escape
  }
  // a segment that decodes to a slash or a dot-segment would name another path
  if (parts.some((p) => p.includes("/") || p === "." || p === "..")) return { view: "missing", path }
  if (parts.length === 0 || (parts.length === 1 && parts[0] === "entities")) return { view: "entities", query: new URLSearchParams(location.search) }
  if (parts.length === 1 && parts[0] === "types") return { view: "types" }
  if (parts.length === 1 && parts[0] === "inspect") return { view: "inspect", query: new URLSearchParams(location.search) }
  if (parts.length === 3 && parts[0] === "entities") return { view: "entity", type: parts[1], id: parts[2] }
  return { view: "missing", path }
}
