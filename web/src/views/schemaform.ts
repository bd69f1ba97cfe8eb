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
