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

const pad = (n: number) => (n < 10 ? "0" : "") + n
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

// Local midnight today and tomorrow, and this year, recomputed only when the clock
// passes midnight (formatTime runs once per timeline event).
let dayStart = 0
let dayEnd = -1
let thisYear = 0
function today(now: number): void {
  const d = new Date(now)
  d.setHours(0, 0, 0, 0)
  dayStart = d.getTime()
  d.setDate(d.getDate() + 1)
  dayEnd = d.getTime()
  thisYear = new Date(now).getFullYear()
}

function toDate(v: unknown): Date | null {
  const d = typeof v === "number" || typeof v === "string" ? new Date(v) : v instanceof Date ? v : null
  return d && !isNaN(d.getTime()) ? d : null
}

/** formatTime is a timestamp in local time: HH:MM:SS today, "26 Nov 14:03:11" on an
 * earlier (or later) day this year, "26 Nov 2025 14:03:11" in another year. Formatted by
 * hand: toLocaleString costs about 60 µs a call, which a 1,000-event timeline feels. */
export function formatTime(v: unknown, now = Date.now()): string {
  const d = toDate(v)
  if (!d) return ""
  if (now >= dayEnd || now < dayStart) today(now)
  const t = d.getTime()
  const time = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
  if (t >= dayStart && t < dayEnd) return time
  const y = d.getFullYear()
  return `${d.getDate()} ${MONTHS[d.getMonth()]}${y === thisYear ? "" : " " + y} ${time}`
}

/** timeEl is a <time> with formatTime's text, the ISO instant as its datetime and the
 * full local date and time as its tooltip. */
export function timeEl(v: unknown): HTMLTimeElement | string {
  const d = toDate(v)
  if (!d) return ""
  const iso = d.toISOString()
  return h("time", { datetime: iso, title: iso }, formatTime(d))
}

const measured = new Map<string, number>()

/** measure records a User Timing measure from start to now (the benchmarks read them),
 * keeping at most 1,000 per name so that a long session does not grow the buffer. */
export function measure(name: string, start: number): void {
  const n = (measured.get(name) ?? 0) + 1
  if (n > 1000) performance.clearMeasures(name)
  measured.set(name, n > 1000 ? 1 : n)
  performance.measure(name, { start, end: performance.now() })
}

/** keepFocus runs render, which rebuilds what is inside container, and gives the focus
 * back to the same control of the same item (the closest ancestor with attr names the
 * item) if one of them had it: a live update must not throw a keyboard user to the top. */
export function keepFocus(container: Element, attr: string, render: () => void): void {
  const active = document.activeElement
  const item = active && active !== container && container.contains(active) ? active.closest(`[${attr}]`) : null
  const key = item?.getAttribute(attr)
  const tag = active?.tagName.toLowerCase()
  render()
  if (key == null || !tag) return
  const again = container.querySelector(`[${attr}="${CSS.escape(key)}"]`)
  const target = again && (again.matches(tag) ? again : again.querySelector(tag))
  if (target instanceof HTMLElement) target.focus()
}
