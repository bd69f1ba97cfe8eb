// Typed messages: a send form generated from the entity type's inbox schemas (message
// type → JSON Schema). Pick the type, fill the fields; the common constraints are checked
// here, the rest by the server, whose 422 details land at the field they name. Hidden
// when the type declares no inbox schemas.

import { h, clear, announce } from "../dom"
import { api, entityPath, ApiError } from "../http"
import { curlButton, type CurlCall } from "../curl"
import { schemaForm, type SchemaForm, type FieldError } from "./schemaform"
import { errorBox, showError } from "./errors"

export type SendPanel = { el: HTMLElement; setDisabled: (disabled: boolean) => void; destroy: () => void }

export function sendForm(type: string, id: string): SendPanel {
  const el = h("section", { class: "panel typed-send", "aria-labelledby": "typed-title", hidden: true })
  let destroyed = false
  let disabled = false
  let submit: HTMLButtonElement | null = null
  const panel: SendPanel = {
    el,
    setDisabled: (d) => {
      disabled = d
      if (submit) submit.disabled = d
    },
    destroy: () => {
      destroyed = true
    },
  }
  api("GET", `/_electric/entity-types/${encodeURIComponent(type)}`).then((t) => {
    if (destroyed) return
    const schemas = t?.inbox_schemas && typeof t.inbox_schemas === "object" ? t.inbox_schemas as Record<string, unknown> : {}
    const names = Object.keys(schemas).sort()
    if (names.length === 0) return
    render(el, type, id, schemas, names, (b) => {
      submit = b
      b.disabled = disabled
    })
    el.hidden = false
  }, () => { /* no type to read (or no right to): no typed messages */ })
  return panel
}

function render(el: HTMLElement, type: string, id: string, schemas: Record<string, any>, names: string[], onSubmit: (b: HTMLButtonElement) => void): void {
  const picker = h("select", { id: "typed-type" }, names.map((n) => h("option", { value: n }, n)))
  const slot = h("div", {})
  const top = errorBox()
  const done = h("p", { class: "ok", role: "status", id: "typed-done" })
  const submit = h("button", { type: "submit", class: "primary" }, "Send message")
  onSubmit(submit)
  let form: SchemaForm = schemaForm(schemas[names[0]], "typed", "Payload")
  const pick = () => {
    form = schemaForm(schemas[picker.value], "typed", "Payload")
    clear(slot)
    slot.appendChild(form.el)
    showError(top, null)
    done.textContent = ""
  }
  picker.addEventListener("change", pick)

  // the call this form would make now, or the field errors that stop it
  const call = (): { call: CurlCall } | { errors: FieldError[] } => {
    const payload = form.value()
    // a field that is not JSON, and what the known constraints say of the rest
    const errors = [...form.jsonErrors(), ...form.validate(payload)]
    if (errors.length) return { errors }
    return { call: { method: "POST", path: `${entityPath(type, id)}/send`, body: { type: picker.value, payload: payload ?? {} } } }
  }
  const showFieldErrors = (errs: FieldError[], summary: string) => {
    const left = form.showErrors(errs)
    clear(top)
    top.appendChild(h("p", { class: "error-summary" }, summary))
    if (left.length) top.appendChild(h("ul", { class: "error-details" }, left.map((d) => h("li", {}, h("code", { class: "error-path" }, d.path || "/"), " ", d.message))))
    const first = el.querySelector("[aria-invalid=true]")
    if (first instanceof HTMLElement) first.focus()
  }

  const send = async () => {
    done.textContent = ""
    form.showErrors([])
    showError(top, null)
    const c = call()
    if ("errors" in c) {
      showFieldErrors(c.errors, "Not sent: fix the fields marked below.")
      return
    }
    submit.disabled = true
    try {
      const r = await api("POST", c.call.path, c.call.body)
      done.textContent = `Sent ${picker.value}${r?.offset ? ` (offset ${r.offset})` : ""}.`
      announce(`Sent ${picker.value}`)
    } catch (err) {
      if (err instanceof ApiError && err.details.length) showFieldErrors(err.details, `${err.status} ${err.code}: ${err.message}`)
      else showError(top, err)
    } finally {
      submit.disabled = false
    }
  }

  clear(el)
  el.appendChild(h("form", { class: "typed-form", novalidate: true, "aria-labelledby": "typed-title", onsubmit: (e: Event) => { e.preventDefault(); void send() } },
    h("h2", { id: "typed-title" }, "Typed message"),
    h("p", { class: "muted" }, "A message of one of the type's inbox schemas, checked here and by the server."),
    h("div", { class: "field" }, h("label", { for: "typed-type" }, "Inbox schema"), picker),
    slot, top, done,
    h("div", { class: "row" }, submit, curlButton(() => {
      const c = call()
      if ("errors" in c) {
        showFieldErrors(c.errors, "Fix the fields marked below to copy this message as curl.")
        return null
      }
      return c.call
    }))))
  slot.appendChild(form.el)
}

/** entityTools is what the entity view mounts below the composer: links to inspect its
 * streams and the typed-message form. */
export function entityTools(type: string, id: string): HTMLElement {
  const base = `/${encodeURIComponent(type)}/${encodeURIComponent(id)}`
  const inspect = (p: string) => `/_electric/console/inspect?path=${encodeURIComponent(p)}`
  return h("div", { class: "entity-tools-body" },
    h("nav", { class: "row inspect-links", "aria-label": "Inspect streams" },
      h("a", { href: inspect(`${base}/main`), "data-link": "" }, "Inspect stream"),
      h("a", { href: inspect(`${base}/slash-commands`), "data-link": "" }, "Inspect slash-commands stream")),
    sendForm(type, id).el)
}
