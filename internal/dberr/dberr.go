// Package dberr classifies errors that come back from Postgres, so that callers outside
// the store packages can tell "the database is not there" (answer 503, retry later) from
// "the database refused this value" (the request's own fault: fail it alone, never its
// neighbours) without importing pgx themselves.
package dberr

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unavailable reports whether err means Postgres could not be reached or went away:
// a refused or reset connection, a server shutting down or starting up, too many
// connections, a connection that broke in the middle of a statement. Such failures say
// nothing about the request and pass when the database is back.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	// No connection could be made, whatever the server said while refusing it (a
	// database that does not accept connections now, a failed login): the request is
	// not at fault, and it passes once the database can be reached.
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case len(pgErr.Code) == 5 && pgErr.Code[:2] == "08": // connection_exception
			return true
		case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03": // admin/crash shutdown, cannot connect now
			return true
		case pgErr.Code == "53300": // too_many_connections
			return true
		}
		return false
	}
	if pgconn.SafeToRetry(err) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	// pgx's own words for a connection that broke under a statement (no typed error).
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == "conn closed" {
			return true
		}
	}
	return false
}

// Refused reports whether Postgres refused a value the request carried: a data
// exception (class 22: an invalid byte sequence, \u0000 in text or jsonb, a number out
// of range), a value too large for an index row (54000), or a violated NOT NULL or CHECK
// constraint. Unique violations are not included: callers treat them as conflicts.
func Refused(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) != 5 {
		return false
	}
	switch {
	case pgErr.Code[:2] == "22":
		return true
	case pgErr.Code == "54000", pgErr.Code == "23502", pgErr.Code == "23514":
		return true
	}
	return false
}

// Code returns the SQLSTATE of a Postgres error in err's chain, or "".
func Code(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// Canceled reports whether err is the caller's context ending (the client went away or
// the server is shutting down), which is neither the database's fault nor the request's.
func Canceled(err error) bool {
	return errors.Is(err, context.Canceled)
}

// Retryable reports a failure Postgres resolved by aborting the transaction, so that
// running it again may succeed: a deadlock (40P01) or a serialization failure (40001).
func Retryable(err error) bool {
	code := Code(err)
	return code == "40P01" || code == "40001"
}

// Retry runs fn, and again while it fails with a Retryable error: at most 3 more times,
// 5, 10 and 15 ms apart. fn must leave nothing behind from a failed attempt.
func Retry[T any](fn func() (T, error)) (T, error) {
	for attempt := 0; ; attempt++ {
		v, err := fn()
		if err == nil || !Retryable(err) || attempt >= 3 {
			return v, err
		}
		time.Sleep(time.Duration(attempt+1) * 5 * time.Millisecond)
	}
}
