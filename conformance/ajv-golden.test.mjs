// internal/schemas' golden test compares entityd's schema validator with
// internal/schemas/testdata/ajv-golden.json; this test keeps that file honest: it must be
// exactly what real Ajv (the reference server's version and options) says about every
// case of ajv-cases.json today. After changing the cases, run `make ajv-golden`.
import { readFileSync } from "node:fs"
import { expect, it } from "vitest"
import { goldenPath, render } from "./ajv-golden.mjs"

it("ajv-golden.json is what Ajv says about ajv-cases.json", () => {
  expect(readFileSync(goldenPath, "utf8")).toBe(render())
})
