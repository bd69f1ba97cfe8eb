package streamdb

import "github.com/entityd/entityd/streamdb/internal/dbsqlc"

// queries are this package's SQL: queries/*.sql, compiled by sqlc into the typed methods
// of internal/dbsqlc (make sqlc; sqlc.yaml at the root). It owns the tables they name
// (migrations.Owners), and no other package names them. Each method takes what it runs
// on: the pool, a Tx, a pgx.Tx, or a batch (pipeline.go).
var queries = dbsqlc.New()
