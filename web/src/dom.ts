// A small element builder: the console is plain DOM, no framework, to stay small and fast.

type Child = Node | string | null | undefined | false
type Attrs = Record<string, string | number | boolean | null | undefined | ((ev: any) => void)>

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: (Child | Child[])[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue
    if (typeof v === "function") el.addEventListener(k.replace(/^on/, "").toLowerCase(), v)
    else if (k === "class") el.className = String(v)
    else if (v === true) el.setAttribute(k, "")
    else el.setAttribute(k, String(v))
  }
  append(el, children)
  return el
}

export function append(el: Node, children: (Child | Child[])[]): void {
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue
    el.appendChild(typeof c === "string" ? document.createTextNode(c) : c)
  }
}

export function clear(el: Element): void {
  while (el.firstChild) el.removeChild(el.firstChild)
}

/** announce says something to screen readers through the page's live region. */
export function announce(text: string): void {
  const region = document.getElementById("announcer")
  if (region) region.textContent = text
}

export function formatTime(v: unknown): string {
  const d = typeof v === "number" ? new Date(v) : typeof v === "string" ? new Date(v) : null
  if (!d || isNaN(d.getTime())) return ""
  return d.toLocaleTimeString([], { hour12: false })
}
