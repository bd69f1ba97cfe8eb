// Builds the console into ../console/dist (embedded by the Go binary). With --check it
// builds into a temporary directory and fails when the committed bundle differs from
// what the sources build to: the bundle in git must be the sources' bundle.
import { build } from "esbuild"
import { mkdtempSync, readFileSync, readdirSync, copyFileSync, mkdirSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, dirname } from "node:path"
import { fileURLToPath } from "node:url"
import { gzipSync } from "node:zlib"
import { createHash } from "node:crypto"

const here = dirname(fileURLToPath(import.meta.url))
const committed = join(here, "..", "console", "dist")
const check = process.argv.includes("--check")
const out = check ? mkdtempSync(join(tmpdir(), "entityd-console-")) : committed

if (!check) rmSync(out, { recursive: true, force: true })
mkdirSync(out, { recursive: true })
// the live feed's SharedWorker (src/feed/worker.ts): one connection for every tab. The
// page names it by its content's hash (feedworker.js?v=…): a tab of a new build never
// joins a worker of an older one still running for other tabs.
await build({
  entryPoints: [join(here, "src", "feed", "worker.ts")],
  outfile: join(out, "feedworker.js"),
  bundle: true,
  minify: !process.env.NO_MINIFY,
  format: "iife",
  target: "es2022",
  platform: "browser",
  legalComments: "none",
  logLevel: "warning",
})
const workerVersion = createHash("sha256").update(readFileSync(join(out, "feedworker.js"))).digest("hex").slice(0, 12)
await build({
  entryPoints: [join(here, "src", "main.ts")],
  outfile: join(out, "app.js"),
  bundle: true,
  define: { __FEED_WORKER__: JSON.stringify(`feedworker.js?v=${workerVersion}`) },
  minify: !process.env.NO_MINIFY, // NO_MINIFY=1 node build.mjs: readable names for profiling
  format: "esm",
  target: "es2022",
  platform: "browser",
  legalComments: "none",
  logLevel: "warning",
})
copyFileSync(join(here, "index.html"), join(out, "index.html"))
// style.css first, then each view's own stylesheet (styles/*.css, by name): one file per
// idea, one request for the page.
const sheets = [join(here, "style.css"), ...readdirSync(join(here, "styles")).filter((f) => f.endsWith(".css")).sort().map((f) => join(here, "styles", f))]
writeFileSync(join(out, "app.css"), sheets.map((f) => readFileSync(f, "utf8")).join("\n"))

let bytes = 0
for (const f of readdirSync(out)) bytes += gzipSync(readFileSync(join(out, f)), { level: 9 }).length
console.log(`console bundle: ${readdirSync(out).join(", ")} — ${(bytes / 1024).toFixed(1)} KB gzipped`)

if (check) {
  const want = readdirSync(out).sort()
  let have = []
  try { have = readdirSync(committed).sort() } catch {}
  const stale = want.filter((f) => !have.includes(f) || !readFileSync(join(out, f)).equals(readFileSync(join(committed, f))))
  const extra = have.filter((f) => !want.includes(f))
  rmSync(out, { recursive: true, force: true })
  if (stale.length || extra.length) {
    console.error(`console/dist does not match web/ (${[...stale, ...extra].join(", ")}): run \`make web\` and commit console/dist`)
    process.exit(1)
  }
  console.log("console/dist matches web/")
}
