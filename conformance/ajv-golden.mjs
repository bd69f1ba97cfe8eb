// Runs every case of internal/schemas/testdata/ajv-cases.json through real Ajv, with the
// options the Electric Agents reference server uses (agents-server's SchemaValidator:
// `new Ajv({ allErrors: true })`, Ajv 8.18.0, no ajv-formats), and renders what Ajv says
// as internal/schemas/testdata/ajv-golden.json. internal/schemas' golden test compares
// entityd's validator with that file; ajv-golden.test.mjs (run by `make test`) fails when
// the committed file is not what Ajv says today.
//
//   node ajv-golden.mjs          rewrite the golden file
//   node ajv-golden.mjs --check  exit 1 when the committed file differs
//
// One Ajv runs the cases like the reference's one instance, but forgets every schema
// after each case (removeSchema()): there, two different schemas with one $id would
// collide, and cases must not depend on each other. (A fresh Ajv per case gives the same
// file and takes thirty times longer: each one compiles the meta-schema again.)
// Details are mapped as the reference maps them: {path: instancePath || "/", message}.
import Ajv from "ajv"
import { readFileSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const here = dirname(fileURLToPath(import.meta.url))
export const casesPath = join(here, "../internal/schemas/testdata/ajv-cases.json")
export const goldenPath = join(here, "../internal/schemas/testdata/ajv-golden.json")

export const ajvOptions = { allErrors: true }
const ajvVersion = createRequire(import.meta.url)("ajv/package.json").version

// outcome is what Ajv says about one case: the schema does not compile (Ajv throws, e.g.
// strict mode), or the instance is valid, or the details.
// Ajv's strict-mode warnings ("missing type ... (strictTypes)") change nothing; they are
// kept off the console. The logger is not a validation option.
const ajv = new Ajv({ ...ajvOptions, logger: { log() {}, warn() {}, error() {} } })

function outcome({ name, schema, instance }) {
  let validate
  try {
    validate = ajv.compile(schema)
  } catch (err) {
    return { name, compiles: false, compileError: err.message }
  } finally {
    ajv.removeSchema()
  }
  if (validate(instance)) return { name, compiles: true, valid: true }
  const details = (validate.errors ?? []).map((e) => ({ path: e.instancePath || "/", message: e.message ?? "validation error" }))
  return { name, compiles: true, valid: false, details }
}

// render returns the golden file's text: one case per line, so a difference shows as
// the lines of the cases that changed.
export function render() {
  const { cases } = JSON.parse(readFileSync(casesPath, "utf8"))
  const names = new Set()
  for (const c of cases) {
    if (names.has(c.name)) throw new Error(`ajv-cases.json: the name ${JSON.stringify(c.name)} is used twice`)
    names.add(c.name)
  }
  const lines = cases.map((c) => "    " + JSON.stringify(outcome(c)))
  return `{\n  "ajv": ${JSON.stringify(ajvVersion)},\n  "options": ${JSON.stringify(ajvOptions)},\n  "cases": [\n${lines.join(",\n")}\n  ]\n}\n`
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = render()
  const count = JSON.parse(text).cases.length
  if (process.argv.includes("--check")) {
    if (readFileSync(goldenPath, "utf8") !== text) {
      console.error(`ajv-golden: ${goldenPath} is not what Ajv ${ajvVersion} says; run \`make ajv-golden\` and review the diff`)
      process.exit(1)
    }
    console.log(`ajv-golden: ${count} cases, the committed golden file is what Ajv ${ajvVersion} says`)
  } else {
    writeFileSync(goldenPath, text)
    console.log(`ajv-golden: wrote ${count} cases to ${goldenPath}`)
  }
}
