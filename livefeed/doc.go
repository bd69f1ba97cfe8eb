// Package livefeed serves GET /_electric/feed: one long-lived response (Server-Sent
// Events) that carries many reads at once, so that a browser tab — or every tab of a
// browser, through the console's SharedWorker — needs one HTTP connection however many
// live streams and shapes it follows. Browsers allow six connections per host over
// HTTP/1.1; each console view used to hold three, so a third tab never loaded.
//
// A client opens a session (GET /_electric/feed; the first event names it), then asks
// for reads with POST /_electric/feed/{session}/requests {"id","path","headers"}. The
// server runs each read in-process through the server's own root handler, with the
// POST's own credentials, so it meets exactly the access decision the same GET would
// meet directly (every stream has one access decision). The read's response comes back
// on the session as head, body (as the handler flushes: a live SSE read stays live) and
// end events, or fail. DELETE /_electric/feed/{session}/requests/{id} cancels a read;
// the session's response ending cancels every read in it, and the session handler
// returns only once they all have.
//
// A session belongs to the principal that opened it: any other caller is told the
// session does not exist (404). Budgets: sessions per principal, reads in flight per
// session, a bounded queue of events per session whose writers wait when it is full, and
// a write deadline on the session's writes (a reader that stops reading ends it).
package livefeed
