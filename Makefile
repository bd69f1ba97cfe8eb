# entityd — the two commands a newcomer needs are `make run` and `make test`.
GO      ?= go
BIN     := bin/entityd
NPM     ?= npm

.PHONY: all build run test test-go test-docs test-conformance conformance-deps ajv-golden web web-deps web-check console-screenshots migrate bench fuzz vet fmt clean sqlc sqlc-check

all: build

build:
	$(GO) build -o $(BIN) ./cmd/server
	$(GO) build -o bin/entityd-external ./cmd/entityd-external

## run: build and start the server on :4437 (embedded Postgres under ./.entityd unless DATABASE_URL is set)
run: build
	./$(BIN)

## test: check the console bundle, start a throwaway Postgres, run every Go test (with -race; the README's tour among them) and the conformance suites
test: web-check build conformance-deps
	$(GO) run ./internal/tools/withpg -- $(MAKE) --no-print-directory test-go test-conformance

test-go:
	$(GO) test -race -count=1 -timeout 20m ./...

## test-docs: only the documentation's tests (internal/doccheck): the README's tour and the docs'
## walkthroughs against a fresh server as `make run` starts it, and every relative link
test-docs:
	$(GO) run ./internal/tools/withpg -- $(GO) test -count=1 ./internal/doccheck

## test-conformance: the Durable Streams suite, the client tests against a fresh server, and the Ajv golden file check
test-conformance: build
	$(GO) run ./internal/tools/suiterun -- $(NPM) --prefix conformance run --silent test

conformance-deps:
	cd conformance && $(NPM) ci --no-audit --no-fund --loglevel=error

## ajv-golden: rewrite internal/schemas/testdata/ajv-golden.json with what real Ajv says about ajv-cases.json (test-conformance fails while they differ)
ajv-golden: conformance-deps
	$(NPM) --prefix conformance run --silent ajv-golden

## web: rebuild the console bundle (console/dist, embedded in the binary) from the TypeScript in web/
web: web-deps
	cd web && $(NPM) run --silent typecheck && $(NPM) run --silent build

## web-check: fail when the committed console bundle is not what web/ builds to
web-check: web-deps
	cd web && $(NPM) run --silent typecheck && $(NPM) run --silent check

web-deps:
	cd web && $(NPM) ci --no-audit --no-fund --loglevel=error

## console-screenshots: run the console's browser tests and save a screenshot of each view (both themes, desktop and phone) under docs/console
console-screenshots: build conformance-deps
	CONSOLE_SCREENSHOTS=$(CURDIR)/docs/console $(GO) run ./internal/tools/withpg -- \
	  $(GO) run ./internal/tools/suiterun -- $(NPM) --prefix conformance run --silent test -- console.test.mjs console-layout.test.mjs

## migrate: apply database migrations to DATABASE_URL (or the embedded cluster) and exit
migrate: build
	./$(BIN) migrate

## fuzz: run every Go fuzz target for FUZZTIME each (default 30s); new failing inputs land in testdata/fuzz/
FUZZTIME ?= 30s
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$f ($$pkg)"; $(GO) test -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

## bench: the send/stream comparison of docs/benchmarks.md (bench/run.sh; ~15 min, fsync on)
bench:
	bench/run.sh

## sqlc: regenerate the typed SQL (sqlc.yaml: streamdb/queries/*.sql into streamdb/internal/dbsqlc)
## and record it in sqlc.sum, which a test compares; sqlc is a Go tool of tools/go.mod (its first
## build compiles pg_query's C sources: minutes)
SQLC = $(GO) tool -modfile=tools/go.mod sqlc
sqlc:
	$(SQLC) generate
	$(GO) test -count=1 -run '^TestGeneratedFromTheQueries$$' ./streamdb/internal/dbsqlc -args -update

## sqlc-check: fail when the committed generated code differs from what sqlc generates now
sqlc-check:
	$(SQLC) diff

vet:
	$(GO) vet ./...

fmt:
	gofmt -l -w $$(git ls-files '*.go')

clean:
	rm -rf bin
