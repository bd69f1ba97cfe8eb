// The official Durable Streams server conformance suite (v0.3.6), pointed at a running
// entityd. The packaged CLI finds no tests when installed from the registry, so this file
// calls the suite itself. ENTITYD_URL is set by `make test-conformance` (suiterun).
import { runConformanceTests } from "@durable-streams/server-conformance-tests"

const baseUrl = process.env.ENTITYD_URL
if (!baseUrl) throw new Error("ENTITYD_URL is not set; run through `make test-conformance`")

runConformanceTests({
  baseUrl,
  // entityd is started with --long-poll-timeout 500ms for this run
  longPollTimeoutMs: 500,
  // the reserved subscription APIs (webhook, pull-wake) are on; DS_SUBSCRIPTIONS=0 skips them
  subscriptions: process.env.DS_SUBSCRIPTIONS !== "0",
})
