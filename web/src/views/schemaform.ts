// A spawn form generated from a type's creation_schema: a field per top-level property
// of a string, number, integer or boolean type (a select for an enum); anything else is
// edited as JSON. The server validates the result; its details are shown by the caller.

import { h } from "../dom"

type Schema = { type?: string | string[]; properties?: Record<string, any>; required?: string[] } | null | undefined

export type ArgsForm = { el: HTMLElement; value: () => unknown }

export function argsForm(schema: Schema, idPrefix: string): ArgsForm {
  const props = schema && typeof schema === "object" && schema.properties && typeof schema.properties === "object" ? schema.properties : null
  if (!props) {
    const area = h("textarea", { id: `${idPrefix}-json`, rows: 3, spellcheck: "false" }, schema ? "{}" : "")
    return {
      el: h("div", { class: "field" }, h("label", { for: `${idPrefix}-json` }, schema ? "Arguments (JSON)" : "Arguments (JSON, optional)"), area),
      value: () => (area.value.trim() === "" ? undefined : JSON.parse(area.value)),
    }
  }
  const required = new Set(schema?.required ?? [])
  const fields: { name: string; read: () => unknown }[] = []
  const el = h("fieldset", { class: "args" }, h("legend", {}, "Arguments"))
  for (const [name, p] of Object.entries(props)) {
    const id = `${idPrefix}-${name}`
    const labelText = `${name}${required.has(name) ? " (required)" : ""}`
    const help = p?.description ? h("span", { class: "muted" }, " " + p.description) : null
    const t = Array.isArray(p?.type) ? p.type.find((x: string) => x !== "null") : p?.type
    if (Array.isArray(p?.enum)) {
      const sel = h("select", { id }, required.has(name) ? null : h("option", { value: "" }, "—"),
        p.enum.map((v: unknown) => h("option", { value: JSON.stringify(v) }, String(v))))
      fields.push({ name, read: () => (sel.value === "" ? undefined : JSON.parse(sel.value)) })
      el.appendChild(h("div", { class: "field" }, h("label", { for: id }, labelText), sel, help))
    } else if (t === "boolean") {
      const box = h("input", { id, type: "checkbox" })
      fields.push({ name, read: () => box.checked })
      el.appendChild(h("div", { class: "field inline" }, box, h("label", { for: id }, labelText), help))
    } else if (t === "number" || t === "integer") {
      const input = h("input", { id, type: "number", step: t === "integer" ? "1" : "any", required: required.has(name) })
      fields.push({ name, read: () => (input.value === "" ? undefined : Number(input.value)) })
      el.appendChild(h("div", { class: "field" }, h("label", { for: id }, labelText), input, help))
    } else if (t === "string") {
      const input = h("input", { id, type: "text", required: required.has(name) })
      fields.push({ name, read: () => (input.value === "" && !required.has(name) ? undefined : input.value) })
      el.appendChild(h("div", { class: "field" }, h("label", { for: id }, labelText), input, help))
    } else {
      const area = h("textarea", { id, rows: 2, spellcheck: "false" })
      fields.push({ name, read: () => (area.value.trim() === "" ? undefined : JSON.parse(area.value)) })
      el.appendChild(h("div", { class: "field" }, h("label", { for: id }, `${labelText} (JSON)`), area, help))
    }
  }
  return {
    el,
    value: () => {
      const out: Record<string, unknown> = {}
      for (const f of fields) {
        const v = f.read()
        if (v !== undefined) out[f.name] = v
      }
      return out
    },
  }
}

// schemaForm is the fuller generator the typed-message form uses: nested objects become
// nested fieldsets, each field knows its JSON pointer, the common constraints are checked
// before sending (required, type, minLength/maxLength, pattern, minimum/maximum, enum), and
// errors — the client's or the server's 422 details — are shown at the field they name.
// What it cannot express (arrays, oneOf, …) is a JSON textarea, parsed on send.

export type FieldError = { path: string; message: string }

export type SchemaForm = {
  el: HTMLElement
  /** value reads the form (a JSON field that does not parse reads as absent) */
  value: () => unknown
  /** jsonErrors are the JSON fields that did not parse at the last value() */
  jsonErrors: () => FieldError[]
  /** validate checks the value against the constraints the form knows */
  validate: (v: unknown) => FieldError[]
  /** showErrors puts each error at its field (or its nearest field); it returns the ones
   * no field took, for the caller to show at the top */
  showErrors: (errs: FieldError[]) => FieldError[]
}

type Node = {
  path: string
  read: () => unknown
  check: (v: unknown, out: FieldError[]) => void
  setError: (msg: string | null) => void
  children?: Map<string, Node>
}

const typeOf = (s: any): string | undefined => (Array.isArray(s?.type) ? s.type.find((x: string) => x !== "null") : s?.type)
  ?? (s?.properties ? "object" : undefined)

function jsonType(v: unknown): string {
  if (v === null) return "null"
  if (Array.isArray(v)) return "array"
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number"
  return typeof v
}

const escPointer = (k: string) => k.replace(/~/g, "~0").replace(/\//g, "~1")

export function schemaForm(schema: any, idPrefix: string, legend: string): SchemaForm {
  const nodes = new Map<string, Node>()
  const root = build(schema, "", idPrefix, legend, true, nodes)
  return {
    el: root.el,
    value: () => root.node.read(),
    jsonErrors: () => {
      const bad: FieldError[] = []
      for (const n of nodes.values()) {
        const e = (n as any).jsonError as string | undefined
        if (e) bad.push({ path: n.path, message: e })
      }
      return bad
    },
    validate: (v) => {
      const out: FieldError[] = []
      root.node.check(v, out)
      return out
    },
    showErrors: (errs) => {
      for (const n of nodes.values()) n.setError(null)
      const left: FieldError[] = []
      const byNode = new Map<Node, string[]>()
      for (const e of errs) {
        let path = e.path || ""
        // "missing property x" on an object names the field that is missing
        const missing = /(?:missing propert(?:y|ies)|required propert(?:y|ies))[^'"]*['"]([^'"]+)['"]/i.exec(e.message)
        if (missing && nodes.has(`${path}/${escPointer(missing[1])}`)) path = `${path}/${escPointer(missing[1])}`
        // the nearest field that is on the path
        while (!nodes.has(path) && path !== "") path = path.slice(0, path.lastIndexOf("/"))
        const n = nodes.get(path)
        if (!n || n === root.node) {
          left.push(e)
          continue
        }
        byNode.set(n, [...(byNode.get(n) ?? []), e.message])
      }
      for (const [n, msgs] of byNode) n.setError(msgs.join("; "))
      return left
    },
  }
}

function fieldShell(id: string, labelText: string, control: HTMLElement, help: string | undefined, inline = false) {
  const err = h("p", { class: "field-error", id: `${id}-error`, hidden: true })
  control.setAttribute("aria-describedby", `${id}-error`)
  const label = h("label", { for: id }, labelText)
  const el = h("div", { class: inline ? "field inline" : "field" }, inline ? [control, label] : [label, control],
    help ? h("span", { class: "muted field-help" }, help) : null, err)
  const setError = (msg: string | null) => {
    err.hidden = !msg
    err.textContent = msg ?? ""
    if (msg) control.setAttribute("aria-invalid", "true")
    else control.removeAttribute("aria-invalid")
  }
  return { el, setError }
}

function build(s: any, path: string, id: string, labelText: string, isRoot: boolean, nodes: Map<string, Node>): { el: HTMLElement; node: Node } {
  const t = typeOf(s)
  const help = typeof s?.description === "string" ? s.description : undefined
  const common = (v: unknown, out: FieldError[]) => {
    if (v === undefined) return
    if (Array.isArray(s?.enum) && !s.enum.some((x: unknown) => JSON.stringify(x) === JSON.stringify(v))) {
      out.push({ path, message: `must be one of ${s.enum.map((x: unknown) => JSON.stringify(x)).join(", ")}` })
      return
    }
    const want = Array.isArray(s?.type) ? s.type : s?.type ? [s.type] : []
    const have = jsonType(v)
    if (want.length && !want.some((w: string) => w === have || (w === "number" && have === "integer"))) {
      out.push({ path, message: `must be ${want.join(" or ")}` })
      return
    }
    if (typeof v === "string") {
      const len = [...v].length
      if (typeof s.minLength === "number" && len < s.minLength) out.push({ path, message: s.minLength === 1 ? "must not be empty" : `must be at least ${s.minLength} characters` })
      if (typeof s.maxLength === "number" && len > s.maxLength) out.push({ path, message: `must be at most ${s.maxLength} characters` })
      if (typeof s.pattern === "string") {
        try {
          if (!new RegExp(s.pattern, "u").test(v)) out.push({ path, message: `must match ${s.pattern}` })
        } catch { /* a pattern JavaScript cannot read: the server checks it */ }
      }
    }
    if (typeof v === "number") {
      if (typeof s.minimum === "number" && v < s.minimum) out.push({ path, message: `must be ≥ ${s.minimum}` })
      if (typeof s.maximum === "number" && v > s.maximum) out.push({ path, message: `must be ≤ ${s.maximum}` })
      if (typeof s.exclusiveMinimum === "number" && v <= s.exclusiveMinimum) out.push({ path, message: `must be > ${s.exclusiveMinimum}` })
      if (typeof s.exclusiveMaximum === "number" && v >= s.exclusiveMaximum) out.push({ path, message: `must be < ${s.exclusiveMaximum}` })
    }
  }

  if (t === "object" && s?.properties && typeof s.properties === "object") {
    const required = new Set<string>(Array.isArray(s.required) ? s.required : [])
    const children = new Map<string, Node>()
    const err = h("p", { class: "field-error", id: `${id}-error`, hidden: true })
    const fs = h("fieldset", { class: isRoot ? "args" : "args nested", "aria-describedby": `${id}-error` }, h("legend", {}, labelText), help ? h("p", { class: "muted field-help" }, help) : null)
    for (const [name, p] of Object.entries<any>(s.properties)) {
      const child = build(p, `${path}/${escPointer(name)}`, `${id}-${name.replace(/[^A-Za-z0-9_-]/g, "_")}`, `${name}${required.has(name) ? " (required)" : ""}`, false, nodes)
      children.set(name, child.node)
      fs.appendChild(child.el)
    }
    fs.appendChild(err)
    const node: Node = {
      path,
      children,
      read: () => {
        const out: Record<string, unknown> = {}
        for (const [k, n] of children) {
          const v = n.read()
          if (v !== undefined) out[k] = v
        }
        return !isRoot && Object.keys(out).length === 0 && !required.size ? undefined : out
      },
      check: (v, out) => {
        if (v === undefined) return
        common(v, out)
        if (jsonType(v) !== "object") return
        const o = v as Record<string, unknown>
        for (const r of required) if (o[r] === undefined) out.push({ path: `${path}/${escPointer(r)}`, message: "is required" })
        for (const [k, n] of children) if (o[k] !== undefined) n.check(o[k], out)
      },
      setError: (msg) => {
        err.hidden = !msg
        err.textContent = msg ?? ""
      },
    }
    nodes.set(path, node)
    return { el: fs, node }
  }

  let control: HTMLElement
  let read: () => unknown
  let inline = false
  let jsonNode: { jsonError?: string } = {}
  if (Array.isArray(s?.enum)) {
    const sel = h("select", { id }, h("option", { value: "" }, "—"), s.enum.map((v: unknown) => h("option", { value: JSON.stringify(v) }, String(v))))
    control = sel
    read = () => (sel.value === "" ? undefined : JSON.parse(sel.value))
  } else if (t === "boolean") {
    const box = h("input", { id, type: "checkbox" })
    control = box
    inline = true
    read = () => box.checked
  } else if (t === "number" || t === "integer") {
    const input = h("input", { id, type: "text", inputmode: t === "integer" ? "numeric" : "decimal", autocomplete: "off" })
    control = input
    read = () => {
      const raw = input.value.trim()
      if (raw === "") return undefined
      const n = Number(raw)
      return Number.isFinite(n) ? n : raw // a string: the type check names it
    }
  } else if (t === "string") {
    const long = typeof s?.maxLength !== "number" || s.maxLength > 120
    const input = long && s?.format === undefined ? h("textarea", { id, rows: 2 }) : h("input", { id, type: "text", autocomplete: "off" })
    control = input
    read = () => (input.value === "" ? undefined : input.value)
  } else {
    const area = h("textarea", { id, rows: 3, spellcheck: "false", class: "json" })
    control = area
    labelText = `${labelText} (JSON)`
    read = () => {
      jsonNode.jsonError = undefined
      if (area.value.trim() === "") return undefined
      try {
        return JSON.parse(area.value)
      } catch (e) {
        jsonNode.jsonError = `not JSON: ${(e as Error).message}`
        return undefined
      }
    }
  }
  const shell = fieldShell(id, labelText, control, help, inline)
  const node: Node & { jsonError?: string } = { path, read, check: common, setError: shell.setError }
  jsonNode = node
  nodes.set(path, node)
  return { el: shell.el, node }
}
