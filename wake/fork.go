package wake

import (
	"context"
	"fmt"

	"github.com/entityd/entityd/streamdb"
)

// ForkTx gives the copy at to of the entity at from the source's delivery state up to
// the fork point (message upto of the copy's stream, which it shares with the source):
// how far the inbox was scanned and which messages are held. It runs inside the fork's
// transaction, after the copy's row (and so its delivery row) was written. Without it
// the copy would be woken with every inbox message of its inherited history as new.
func ForkTx(ctx context.Context, tx *streamdb.Tx, from, to string, upto int64) error {
	if _, err := tx.Exec(ctx, sqlForkScan, from, to, upto); err != nil {
		return fmt.Errorf("wake: fork scan state: %w", err)
	}
	if _, err := tx.Exec(ctx, sqlForkHeld, from, to, upto); err != nil {
		return fmt.Errorf("wake: fork held messages: %w", err)
	}
	return nil
}
