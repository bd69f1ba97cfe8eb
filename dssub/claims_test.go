package dssub

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/entityd/entityd/internal/httpx"
)

// A claim is one statement without a lock: these are the answers it must still give.
func TestClaimWakeAnswers(t *testing.T) {
	h := startHarness(t, "", testOptions())
	ctx := context.Background()
	rc := newReceiver(t, answerAlways(200, `{}`))
	h.createSub("cl", webhookConfig(rc.URL))
	h.createStream("events/cl", `{"event":"created"}`)
	first := rc.next(5 * time.Second).Body
	cb := WakeCallback{WakeID: first.WakeID, Token: first.CallbackToken, Generation: first.Generation}

	token, err := h.Svc.ClaimWake(ctx, cb)
	if err != nil || token == "" {
		t.Fatalf("claim of the current wake: %q %v", token, err)
	}
	if ok, err := h.Svc.CheckWriteToken(ctx, "/events/cl", token); err != nil || !ok {
		t.Fatalf("the claimed token writes to the wake's stream: %v %v", ok, err)
	}
	again, err := h.Svc.ClaimWake(ctx, cb)
	if err != nil || again == token {
		t.Fatalf("a second claim of the same wake gives a new token: %q %v", again, err)
	}
	if ok, _ := h.Svc.CheckWriteToken(ctx, "/events/cl", token); ok {
		t.Fatal("the replaced token still writes")
	}

	wantCode := func(what string, err error, status int, code string) {
		t.Helper()
		var he *httpx.Error
		if !errors.As(err, &he) || he.Status != status || he.Code != code {
			t.Fatalf("%s: want %d %s, got %v", what, status, code, err)
		}
	}
	bad := cb
	bad.Token += "x"
	wantCode("a forged token", errOf(h.Svc.ClaimWake(ctx, bad)), http.StatusUnauthorized, codeTokenInvalid)
	stale := cb
	stale.Generation++
	wantCode("a generation that is not the token's", errOf(h.Svc.ClaimWake(ctx, stale)), http.StatusConflict, codeFenced)

	// Done ends the wake; the next append starts another. The first wake's claim and its
	// token are fenced, and the second wake's claim works.
	r := callback(h, first, map[string]any{"wake_id": first.WakeID, "generation": first.Generation, "done": true})
	if r.Status != http.StatusOK {
		t.Fatalf("done: %d %s", r.Status, r.Body)
	}
	if _, err := h.Svc.ClaimWake(ctx, cb); !errors.Is(err, ErrWakeNotCurrent) {
		t.Fatalf("claim of an ended wake: %v", err)
	}
	if ok, _ := h.Svc.CheckWriteToken(ctx, "/events/cl", again); ok {
		t.Fatal("an ended wake's token still writes")
	}
	h.appendStream("events/cl", `{"event":"more"}`)
	second := rc.next(5 * time.Second).Body
	if second.Generation <= first.Generation {
		t.Fatalf("generation %d after %d", second.Generation, first.Generation)
	}
	next, err := h.Svc.ClaimWake(ctx, WakeCallback{WakeID: second.WakeID, Token: second.CallbackToken, Generation: second.Generation})
	if err != nil {
		t.Fatal(err)
	}

	// The race the statement guards against: a claim of the first wake that read the
	// subscription while that wake was current, and writes after the second wake's claim.
	// Replayed by putting the subscription back to the first wake for the claim's read:
	// the row of the later generation must not be replaced.
	_, err = h.Pool.Exec(ctx, `UPDATE ds_subscriptions SET wake_id = $2, generation = $3 WHERE id = $1`,
		"cl", first.WakeID, first.Generation)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	err = h.Pool.QueryRow(ctx, `WITH c AS (`+sqlClaimWriteTokens+`) SELECT count(*) FROM c`,
		[]string{first.WakeID}, []string{"cl"}, []int64{first.Generation}, [][]byte{tokenHash("wt_stale")}).Scan(&n)
	if err != nil || n != 0 {
		t.Fatalf("a stale claim replaced a later wake's token: %d rows, %v", n, err)
	}
	var gen int64
	if err := h.Pool.QueryRow(ctx, `SELECT generation FROM ds_write_tokens WHERE token_hash = $1`, tokenHash(next)).Scan(&gen); err != nil || gen != second.Generation {
		t.Fatalf("the second wake's token row: generation %d, %v", gen, err)
	}
}

func errOf(_ string, err error) error { return err }

// Two claims of one subscription in one statement's batch: the second gets a statement
// of its own after the first, and its token is the one that writes.
func TestStoreTokensTwiceForOneSubscription(t *testing.T) {
	h := startHarness(t, "", testOptions())
	ctx := context.Background()
	rc := newReceiver(t, answerAlways(200, `{}`))
	h.createSub("twice", webhookConfig(rc.URL))
	h.createStream("events/twice", `{"event":"created"}`)
	w := rc.next(5 * time.Second).Body
	a := tokenClaim{wakeID: w.WakeID, sub: "twice", generation: w.Generation, hash: tokenHash("wt_a")}
	b := a
	b.hash = tokenHash("wt_b")
	stale := a
	stale.generation--
	stale.hash = tokenHash("wt_stale")
	stored, err := h.Svc.storeTokens(ctx, []tokenClaim{a, stale, b})
	if err != nil || !stored[0] || stored[1] || !stored[2] {
		t.Fatalf("stored %v, %v", stored, err)
	}
	for tok, want := range map[string]bool{"wt_a": false, "wt_stale": false, "wt_b": true} {
		if ok, _ := h.Svc.CheckWriteToken(ctx, "/events/twice", tok); ok != want {
			t.Fatalf("token %s writes: %v, want %v", tok, ok, want)
		}
	}
}

// The checks of many writes in one statement: each is answered for its own stream and
// token, whatever else the statement carries.
func TestCheckTokensAnswersEachWrite(t *testing.T) {
	h := startHarness(t, "", testOptions())
	ctx := context.Background()
	rc := newReceiver(t, answerAlways(200, `{}`))
	for _, id := range []string{"ca", "cb"} {
		cfg := webhookConfig(rc.URL)
		cfg["pattern"] = "events/" + id // each wake lists its own stream only
		h.createSub(id, cfg)
	}
	h.createStream("events/ca", `{"event":"created"}`)
	h.createStream("events/cb", `{"event":"created"}`)
	tokens := map[string]string{}
	// one wake of each subscription; on a loaded machine a wake can come twice (a
	// redelivery), and the later claim's token is the one that holds
	for len(tokens) < 2 {
		w := rc.next(5 * time.Second).Body
		tok, err := h.Svc.ClaimWake(ctx, WakeCallback{WakeID: w.WakeID, Token: w.CallbackToken, Generation: w.Generation})
		if err != nil {
			t.Fatal(err)
		}
		tokens[w.SubscriptionID] = tok
	}
	checks := []tokenCheck{
		{"/events/cb", tokenHash(tokens["cb"])}, // holds
		{"/events/ca", tokenHash(tokens["cb"])}, // another wake's stream
		{"/events/ca", tokenHash("wt_unknown")}, // no such token
		{"/events/ca", tokenHash(tokens["ca"])}, // holds
		{"/events/cb", tokenHash(tokens["cb"])}, // the same check twice
	}
	got, err := h.Svc.checkTokens(ctx, checks)
	want := []bool{true, false, false, true, true}
	if err != nil || len(got) != len(want) {
		t.Fatalf("checkTokens: %v %v", got, err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("check %d (%s): %v, want %v (all: %v)", i, checks[i].path, got[i], want[i], got)
		}
	}
}

// The webhook answers' shared statement must not deadlock with a transaction that links
// streams to the same subscriptions in another order: inserting a link takes a key-share
// lock on its subscription, which the statement's lock (NO KEY UPDATE) does not block.
func TestAcceptDeliveriesDoNotBlockLinking(t *testing.T) {
	h := startHarness(t, "", testOptions())
	ctx := context.Background()
	h.createSub("aa", webhookConfig("http://127.0.0.1:9/never"))
	h.createSub("ab", webhookConfig("http://127.0.0.1:9/never"))
	_, err := h.Pool.Exec(ctx, `UPDATE ds_subscriptions SET wake_id = 'w_' || id, generation = 1,
		phase = 'delivering', lease_ttl_ms = 60000 WHERE id IN ('aa', 'ab')`)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := h.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	link := func(sub, path string) error {
		_, err := tx.Exec(ctx, `INSERT INTO ds_subscription_streams (subscription_id, path, glob, acked_seq, acked_pos)
			VALUES ($1, $2, true, -1, -1)`, sub, path)
		return err
	}
	if err := link("ab", "x/1"); err != nil { // key-share lock on ab
		t.Fatal(err)
	}
	answered := make(chan error, 1)
	go func() {
		_, err := h.Svc.recordAccepted(ctx, []acceptedWake{{"aa", "w_aa", 1}, {"ab", "w_ab", 1}})
		answered <- err
	}()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("the answers' statement: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the answers' statement waited for the linking transaction")
	}
	if err := link("aa", "x/1"); err != nil {
		t.Fatalf("linking after the statement: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var open int
	if err := h.Pool.QueryRow(ctx, `SELECT count(*) FROM ds_subscriptions WHERE id IN ('aa', 'ab') AND phase = 'open'`).Scan(&open); err != nil || open != 2 {
		t.Fatalf("open wakes: %d, %v", open, err)
	}
}
