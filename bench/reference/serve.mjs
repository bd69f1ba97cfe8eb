// Starts the Node reference Durable Streams server (@durable-streams/server, pinned in
// package.json) in memory, for bench/run.sh to compare entityd against.
//
//   node serve.mjs [--port 4438] [--long-poll-ms 20000]
//   PORT=4438 LONG_POLL_MS=20000 node serve.mjs
//
// Compression stays at the server's default (on); the bench client sends no
// Accept-Encoding, so responses are not compressed. Prints "listening <url>" when ready.
import { parseArgs } from "node:util"
import { DurableStreamTestServer } from "@durable-streams/server"

const { values } = parseArgs({
  options: {
    port: { type: "string", default: process.env.PORT ?? "4438" },
    host: { type: "string", default: process.env.HOST ?? "127.0.0.1" },
    "long-poll-ms": { type: "string", default: process.env.LONG_POLL_MS ?? "20000" },
  },
})

const server = new DurableStreamTestServer({
  host: values.host,
  port: Number(values.port),
  longPollTimeout: Number(values["long-poll-ms"]),
})
const url = await server.start()
console.log(`listening ${url} (in memory, long-poll timeout ${values["long-poll-ms"]} ms, node ${process.version})`)

let stopping = false
const stop = async () => {
  if (stopping) return
  stopping = true
  await server.stop()
  process.exit(0)
}
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
