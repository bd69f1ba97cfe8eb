// Helpers the client tests share: calls to the entityd under test, and waiting for a
// condition with a deadline.
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
