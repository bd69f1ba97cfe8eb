package dberr

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestRetryOnlyAbortedTransactions(t *testing.T) {
	deadlock := &pgconn.PgError{Code: "40P01"}
	calls := 0
	v, err := Retry(func() (int, error) {
		calls++
		if calls < 3 {
			return 0, deadlock
		}
		return 7, nil
	})
	if v != 7 || err != nil || calls != 3 {
		t.Fatalf("deadlocks: %d, %v after %d calls", v, err, calls)
	}
	calls = 0
	_, err = Retry(func() (int, error) { calls++; return 0, &pgconn.PgError{Code: "40001"} })
	if !Retryable(err) || calls != 4 {
		t.Fatalf("serialization failures: %v after %d calls, want 4", err, calls)
	}
	calls = 0
	other := errors.New("unique violation")
	if _, err = Retry(func() (int, error) { calls++; return 0, other }); err != other || calls != 1 {
		t.Fatalf("other errors are not retried: %v after %d calls", err, calls)
	}
}
