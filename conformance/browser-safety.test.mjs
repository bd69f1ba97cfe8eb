// A real Chromium (Debian's, driven by playwright-core) against entityd: a page on
// another site cannot write in dev mode (CORS, the Origin check, the JSON content type),
// a DNS name rebound to 127.0.0.1 is refused (Host check), and in jwt mode a page whose
// origin is allowed reads and writes with a token.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import http from "node:http"
import { base, jwtKeys, launchChromium, startEntityd } from "./lib.mjs"

const port = new URL(base).port

let browser, pages, pagePort

// open loads a blank page at origin and returns it (the page's scripts run there).
async function open(origin) {
  const page = await browser.newPage()
  const res = await page.goto(`${origin}/`)
  return { page, status: res.status() }
}

// attempt runs fetch in the page; it returns the status, or "blocked" when the browser
// refused to give the page the response (CORS).
function attempt(page, url, init) {
  return page.evaluate(async ([url, init]) => {
    try {
      const r = await fetch(url, init)
      return r.type === "opaque" ? "opaque" : r.status
    } catch {
      return "blocked"
    }
  }, [url, init])
}

async function status(path, init) {
  return (await fetch(`${base}${path}`, init)).status
}

beforeAll(async () => {
  pages = http.createServer((req, res) => {
    res.setHeader("content-type", "text/html")
    res.end("<!doctype html><title>a page</title>")
  })
  await new Promise((r) => pages.listen(0, "127.0.0.1", r))
  pagePort = pages.address().port
  // names that are not this machine's, pointing at it: another site, and a rebound name
  browser = await launchChromium(["--host-resolver-rules=MAP evil.test 127.0.0.1, MAP app.test 127.0.0.1, MAP rebind.test 127.0.0.1"])

})

afterAll(async () => {
  await browser?.close()
  await new Promise((r) => pages?.close(r))
})

describe("browser safety in dev mode", () => {
  it("a page on another origin cannot write", async () => {
    const { page } = await open(`http://evil.test:${pagePort}`)
    const type = `evil-${Date.now()}`
    // JSON: the preflight gets no Access-Control-Allow-Origin, so the browser never sends it
    expect(await attempt(page, `${base}/_electric/entity-types`, {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: type, description: "x" }),
    })).toBe("blocked")
    // a "simple" request the browser sends without asking: refused by the Origin check
    // (and, were it not, by the content type)
    await attempt(page, `${base}/_electric/entity-types`, {
      method: "POST", mode: "no-cors", headers: { "content-type": "text/plain" },
      body: JSON.stringify({ name: type, description: "x" }),
    })
    await attempt(page, `${base}/${type}-stream`, { method: "PUT", mode: "no-cors", body: "hello" })
    await attempt(page, `${base}/_electric/entities/${type}/e1`, { method: "PUT", mode: "no-cors", body: "{}" })
    expect(await status(`/_electric/entity-types/${type}`)).toBe(404)
    expect(await status(`/${type}-stream`)).toBe(404)
    // nor read: no CORS grant for its origin
    expect(await attempt(page, `${base}/_electric/entity-types`, {})).toBe("blocked")
    await page.close()
  })

  it("a DNS name rebound to 127.0.0.1 is refused", async () => {
    const { page, status: s } = await open(`http://rebind.test:${port}`)
    expect(s).toBe(421)
    expect(await attempt(page, `http://rebind.test:${port}/_electric/entity-types`, {})).toBe(421)
    await page.close()
  })

  it("a page on this machine may use it", async () => {
    const { page } = await open(`http://127.0.0.1:${pagePort}`)
    const type = `local-${Date.now()}`
    expect(await attempt(page, `${base}/_electric/entity-types`, {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: type, description: "x" }),
    })).toBe(201)
    expect(await attempt(page, `${base}/_electric/entity-types/${type}`, {})).toBe(200)
    await page.close()
  })
})

describe("browser access in jwt mode", () => {
  let server, jwtBase, token

  beforeAll(async () => {
    const keys = await jwtKeys("user:ada")
    token = keys.token
    server = await startEntityd(["--auth", "jwt", "--jwt-keys", keys.jwks,
      "--cors-origins", `http://app.test:${pagePort}`, "--no-demo"])
    jwtBase = server.url
  })

  afterAll(async () => {
    await server?.stop()
  })

  it("a page whose origin is allowed reads and writes with a token", async () => {
    const { page } = await open(`http://app.test:${pagePort}`)
    const type = `app-${Date.now()}`
    const auth = { authorization: `Bearer ${token}` }
    const json = { ...auth, "content-type": "application/json" }
    expect(await attempt(page, `${jwtBase}/_electric/entity-types`, {
      method: "POST", headers: json, body: JSON.stringify({ name: type, description: "x" }),
    })).toBe(201)
    expect(await attempt(page, `${jwtBase}/_electric/entities/${type}/e1`, { method: "PUT", headers: json, body: "{}" })).toBe(201)
    expect(await attempt(page, `${jwtBase}/_electric/entities/${type}/e1/send`, {
      method: "POST", headers: json, body: JSON.stringify({ payload: "hi" }),
    })).toBe(200)
    expect(await attempt(page, `${jwtBase}/${type}/e1/main?offset=-1`, { headers: auth })).toBe(200)
    // without the token: a 401 the page can read
    expect(await attempt(page, `${jwtBase}/_electric/entities/${type}/e1`, {})).toBe(401)
    await page.close()

    // the same token on a page of another origin: the browser keeps it out
    const evil = await open(`http://evil.test:${pagePort}`)
    expect(await attempt(evil.page, `${jwtBase}/_electric/entities/${type}/e1`, { headers: auth })).toBe("blocked")
    expect(await attempt(evil.page, `${jwtBase}/_electric/entities/${type}/e1/send`, {
      method: "POST", headers: json, body: JSON.stringify({ payload: "evil" }),
    })).toBe("blocked")
    await evil.page.close()
    const events = await (await fetch(`${jwtBase}/${type}/e1/main?offset=-1`, { headers: auth })).json()
    expect(events.filter((e) => e.type === "inbox").map((e) => e.value.payload)).toEqual(["hi"])
  })
})
