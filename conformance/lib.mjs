// Helpers the client tests share: calls to the entityd under test, waiting for a
// condition with a deadline, and starting another entityd with other flags.
import { spawn } from "node:child_process"
import net from "node:net"
import { chromium } from "playwright-core"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as jose from "jose"

export const base = process.env.ENTITYD_URL
if (!base) throw new Error("ENTITYD_URL is not set; run through `make test-conformance`")

export async function call(method, path, body) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null }
}

export async function waitFor(check, what, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await check()
    if (v) return v
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

// freePort asks the kernel for a port nobody listens on.
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer()
    s.listen(0, "127.0.0.1", () => {
      const p = s.address().port
      s.close(() => resolve(p))
    })
    s.on("error", reject)
  })
}

// startEntityd runs another entityd (bin/entityd) on the suite's database with extra
// flags (on port, or a free one), waits until it answers, and returns its base URL and
// a stop function.
export async function startEntityd(args, { port } = {}) {
  const p = port ?? (await freePort())
  const url = `http://127.0.0.1:${p}`
  const proc = spawn("../bin/entityd", ["--addr", `127.0.0.1:${p}`, "--log-level", "warn", ...args],
    { env: { ...process.env, DATABASE_URL: process.env.ENTITYD_DATABASE_URL }, stdio: ["ignore", "inherit", "inherit"] })
  const exited = new Promise((r) => proc.once("exit", r))
  await waitFor(async () => {
    if (proc.exitCode !== null) throw new Error(`entityd ${args.join(" ")} exited with ${proc.exitCode}`)
    try {
      return (await fetch(`${url}/_electric/ready`)).ok
    } catch {
      return false
    }
  }, `entityd ${args.join(" ")}`, 20000)
  return {
    url,
    stop: async () => {
      if (proc.exitCode === null) proc.kill("SIGTERM")
      await exited
    },
  }
}

// launchChromium starts Debian's Chromium (CHROMIUM_PATH to use another) headless.
export function launchChromium(extraArgs = []) {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", ...extraArgs],
  })
}

// jwtKeys makes an Ed25519 key for a jwt-mode server: the JWKS file to pass as
// --jwt-keys, and a token (valid for an hour) for subject.
export async function jwtKeys(subject) {
  const { publicKey, privateKey } = await jose.generateKeyPair("EdDSA", { crv: "Ed25519" })
  const jwk = { ...(await jose.exportJWK(publicKey)), kid: "k1", alg: "EdDSA", use: "sig" }
  const jwks = join(mkdtempSync(join(tmpdir(), "entityd-jwt-")), "jwks.json")
  writeFileSync(jwks, JSON.stringify({ keys: [jwk] }))
  const token = await new jose.SignJWT({}).setProtectedHeader({ alg: "EdDSA", kid: "k1" }).setSubject(subject)
    .setIssuedAt().setExpirationTime("1h").sign(privateKey)
  return { jwks, token }
}
