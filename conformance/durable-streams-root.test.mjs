// The official Durable Streams conformance suite again, against streams at the root of
// the URL space. The suite names every stream `/v1/stream/<name>` (in request paths and
// in Stream-Forked-From), which entityd serves as an alias; so this pass runs it through
// a small in-process proxy that strips that prefix, and entityd sees only root paths
// (`/<name>`). Nothing else is touched: bodies, statuses and other headers pass through
// unchanged (except Location, which is mapped back as a reverse proxy would), and responses
// stream as they arrive (long-poll, SSE).
// The 6 subscription tests address the control routes under the alias and check URLs
// that name it; they run in the first pass (durable-streams.test.mjs), not here.
import http from "node:http"
import { beforeAll, afterAll } from "vitest"
import { runConformanceTests } from "@durable-streams/server-conformance-tests"

const target = process.env.ENTITYD_URL
if (!target) throw new Error("ENTITYD_URL is not set; run through `make test-conformance`")
const upstream = new URL(target)
const alias = "/v1/stream"
const toRoot = (p) => (p && p.startsWith(alias + "/") ? p.slice(alias.length) : p)

const proxy = http.createServer((req, res) => {
  const headers = { ...req.headers, host: upstream.host }
  if (headers["stream-forked-from"]) headers["stream-forked-from"] = toRoot(headers["stream-forked-from"])
  const out = http.request(
    { hostname: upstream.hostname, port: upstream.port, method: req.method, path: toRoot(req.url), headers },
    (up) => {
      const headers = { ...up.headers }
      if (headers.location) {
        // as a reverse proxy does: a Location on entityd names the stream as the client did
        const loc = new URL(headers.location)
        headers.location = `${config.baseUrl}${alias}${loc.pathname}${loc.search}`
      }
      res.writeHead(up.statusCode, up.statusMessage, headers)
      up.pipe(res)
    },
  )
  out.on("error", (err) => res.destroy(err))
  res.on("close", () => { if (!res.writableFinished) out.destroy() })
  req.pipe(out)
})

const config = { baseUrl: "", longPollTimeoutMs: 500, subscriptions: false }
beforeAll(async () => {
  await new Promise((resolve) => proxy.listen(0, "127.0.0.1", resolve))
  config.baseUrl = `http://127.0.0.1:${proxy.address().port}`
})
afterAll(() => new Promise((resolve) => { proxy.closeAllConnections(); proxy.close(resolve) }))

runConformanceTests(config)
