// The colour theme: "system" follows prefers-color-scheme (pure CSS, no script needed),
// "light" and "dark" override it through <html data-theme>. The choice is kept in
// localStorage (every tab of this console) and applied when this module is evaluated —
// main.ts imports it first, so it runs before anything is rendered (the CSP forbids an
// inline script in index.html).

export type Theme = "system" | "light" | "dark"

const KEY = "entityd.console.theme"
export const THEMES: Theme[] = ["system", "light", "dark"]

export function storedTheme(): Theme {
  let v: string | null = null
  try {
    v = localStorage.getItem(KEY)
  } catch {
    // storage disabled: the system's theme
  }
  return v === "light" || v === "dark" ? v : "system"
}

export function applyTheme(t: Theme): void {
  const root = document.documentElement
  if (t === "system") root.removeAttribute("data-theme")
  else root.setAttribute("data-theme", t)
}

export function setTheme(t: Theme): void {
  try {
    if (t === "system") localStorage.removeItem(KEY)
    else localStorage.setItem(KEY, t)
  } catch {
    // not remembered, still applied
  }
  applyTheme(t)
}

/** onThemeChange tells f when another tab changes the theme (it applies it here too). */
export function onThemeChange(f: (t: Theme) => void): void {
  window.addEventListener("storage", (e) => {
    if (e.key !== KEY && e.key !== null) return
    const t = storedTheme()
    applyTheme(t)
    f(t)
  })
}

applyTheme(storedTheme())
