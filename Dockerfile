# entityd server image. Build: docker build -t entityd .
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/entityd ./cmd/server

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/entityd /usr/local/bin/entityd
# The demo assistant's skills (its dynamic slash commands).
COPY skills /usr/share/entityd/skills
USER 65534:65534
EXPOSE 4437
# The image has no PostgreSQL to start a private cluster from: DATABASE_URL is required,
# and its absence is a one-line error that says so.
ENV ENTITYD_ADDR=:4437 ENTITYD_LOG_FORMAT=json ENTITYD_SKILLS_DIR=/usr/share/entityd/skills \
    ENTITYD_REQUIRE_DATABASE_URL=true
HEALTHCHECK --interval=10s --timeout=3s CMD curl -fsS http://127.0.0.1:4437/_electric/health || exit 1
ENTRYPOINT ["/usr/local/bin/entityd"]
