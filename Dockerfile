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
USER 65534:65534
EXPOSE 4437
ENV ENTITYD_ADDR=:4437 ENTITYD_LOG_FORMAT=json
HEALTHCHECK --interval=10s --timeout=3s CMD curl -fsS http://127.0.0.1:4437/_electric/health || exit 1
ENTRYPOINT ["/usr/local/bin/entityd"]
