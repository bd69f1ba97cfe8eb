package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// runFill fills a database with many entities and events, fast, for the flat-cost
// benchmarks. It spawns one template entity over HTTP (so every row and event is what a
// real spawn and real sends write, triggers included), then clones it inside Postgres
// with INSERT … SELECT over generate_series: nothing crosses the wire per row, which
// is faster than COPY, and the clone cannot get an invariant wrong that the template
// got right. It also makes one plain stream of -big-stream messages for catch-up reads.
//
//	entityd-bench fill -url http://127.0.0.1:4437 -database-url postgres://… -entities 1000000
func runFill(args []string) error {
	fs := flag.NewFlagSet("fill", flag.ExitOnError)
	var c commonFlags
	c.register(fs, "http://127.0.0.1:4437")
	dbURL := fs.String("database-url", "", "the server's database (required)")
	entities := fs.Int("entities", 1_000_000, "entities to create")
	sends := fs.Int("sends", 4, "messages in each entity's stream besides its spawn events")
	big := fs.Int("big-stream", 1_000_000, "messages of the plain stream /fill-big (0: none)")
	chunk := fs.Int("chunk", 50_000, "entities per transaction")
	typeName := fs.String("type", "fill", "entity type of the clones")
	_ = fs.Parse(args)
	if *dbURL == "" {
		return fmt.Errorf("-database-url is required")
	}
	ctx, stop := signalContext()
	defer stop()
	client := newClient(4, false)
	base := c.base()
	began := time.Now()

	// the template: a real type, a real spawn, real sends
	typeBody := `{"name":"` + *typeName + `","description":"filled by entityd-bench fill","slash_commands":[` +
		`{"name":"quickstart","description":"Show how to get started"},` +
		`{"name":"search","description":"Search","arguments":[{"name":"query","type":"string","required":true}]}]}`
	if status, _, body, err := do(ctx, client, http.MethodPost, base+"/_electric/entity-types", jsonHdr, []byte(typeBody)); err != nil || status/100 != 2 {
		return fmt.Errorf("register the type: %d %s %v", status, body, err)
	}
	tmpl := "/" + *typeName + "/template"
	if status, _, body, err := do(ctx, client, http.MethodPut, base+"/_electric/entities"+tmpl, jsonHdr, []byte(`{}`)); err != nil || status != http.StatusCreated {
		return fmt.Errorf("spawn the template: %d %s %v", status, body, err)
	}
	payload := string(composerInput(7, 300))
	for i := range *sends {
		msg := fmt.Sprintf(`{"type":"composer_input","payload":%s,"key":"fill-%d"}`, payload, i)
		if status, _, body, err := do(ctx, client, http.MethodPost, base+"/_electric/entities"+tmpl+"/send", jsonHdr, []byte(msg)); err != nil || status != http.StatusOK {
			return fmt.Errorf("send to the template: %d %s %v", status, body, err)
		}
	}

	pool, err := pgxpool.New(ctx, *dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	cols := func(table string, skip ...string) (string, error) {
		rows, err := pool.Query(ctx, `SELECT column_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`, table)
		if err != nil {
			return "", err
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return "", err
		}
		var keep []string
		for _, n := range names {
			skipped := false
			for _, s := range skip {
				skipped = skipped || n == s
			}
			if !skipped {
				keep = append(keep, n)
			}
		}
		return strings.Join(keep, ", "), nil
	}
	var cc cloneCols
	for _, x := range []struct {
		dst   *string
		table string
		skip  []string
	}{
		{&cc.streams, "streams", []string{"id", "path"}},
		{&cc.entities, "entities", []string{"url", "instance_id", "stream_id", "write_token"}},
		{&cc.commands, "slash_commands", []string{"entity_url"}},
		{&cc.dedupe, "stream_dedupe", []string{"stream_id"}},
	} {
		if *x.dst, err = cols(x.table, x.skip...); err != nil {
			return err
		}
	}
	for from := 0; from < *entities; from += *chunk {
		to := min(from+*chunk, *entities) - 1
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			return cloneChunk(ctx, tx, *typeName, tmpl, cc, from, to)
		}); err != nil {
			return fmt.Errorf("clone entities %d..%d: %w", from, to, err)
		}
		fmt.Printf("entities %d..%d cloned (%v)\n", from, to, time.Since(began).Round(time.Second))
	}
	if *big > 0 {
		if err := fillBig(ctx, client, pool, base, *big); err != nil {
			return err
		}
		fmt.Printf("/fill-big: %d messages (%v)\n", *big, time.Since(began).Round(time.Second))
	}
	if _, err := pool.Exec(ctx, `ANALYZE`); err != nil {
		return err
	}
	var events int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM stream_messages`).Scan(&events); err != nil {
		return err
	}
	fmt.Printf("done in %v: %d stored events\n", time.Since(began).Round(time.Second), events)
	return nil
}

var jsonHdr = map[string]string{"Content-Type": "application/json"}

// cloneCols are the copied columns of each table (all but the ones a clone replaces),
// read from the schema so that a new column is copied too.
type cloneCols struct{ streams, entities, commands, dedupe string }

// cloneChunk copies the template entity (its two streams and their messages, its entity
// row, its commands, its delivery state) to /<type>/e<from> … /<type>/e<to>.
func cloneChunk(ctx context.Context, tx pgx.Tx, typ, tmpl string, c cloneCols, from, to int) error {
	streamCols, entityCols, cmdCols, dedupeCols := c.streams, c.entities, c.commands, c.dedupe
	prefix := "/" + typ + "/e"
	steps := []string{
		// both streams of each clone
		`INSERT INTO streams (path, ` + streamCols + `)
		 SELECT $1 || g || substr(t.path, length($4) + 1), ` + prefixed(streamCols, "t.") + `
		 FROM generate_series($2::int, $3::int) g, streams t
		 WHERE t.path IN ($4 || '/main', $4 || '/slash-commands')`,
		// their messages
		`INSERT INTO stream_messages (stream_id, seq, end_pos, data)
		 SELECT s.id, m.seq, m.end_pos, m.data
		 FROM generate_series($2::int, $3::int) g
		 CROSS JOIN (VALUES ('/main'), ('/slash-commands')) AS k(suffix)
		 JOIN streams t ON t.path = $4 || k.suffix
		 JOIN stream_messages m ON m.stream_id = t.id
		 JOIN streams s ON s.path = $1 || g || k.suffix`,
		// the entity rows (triggers enrol them for delivery and log them for shapes)
		`INSERT INTO entities (url, instance_id, stream_id, write_token, ` + entityCols + `)
		 SELECT $1 || g, 'e' || g, s.id, md5(random()::text), ` + prefixed(entityCols, "e.") + `
		 FROM generate_series($2::int, $3::int) g
		 JOIN entities e ON e.url = $4
		 JOIN streams s ON s.path = $1 || g || '/main'`,
		// delivery state as the template's (handled as far as it was)
		`UPDATE entity_wake w SET scanned_seq = t.scanned_seq
		 FROM entity_wake t, generate_series($2::int, $3::int) g
		 WHERE t.entity_url = $4 AND w.entity_url = $1 || g`,
		`INSERT INTO slash_commands (entity_url, ` + cmdCols + `)
		 SELECT $1 || g, ` + prefixed(cmdCols, "c.") + `
		 FROM generate_series($2::int, $3::int) g JOIN slash_commands c ON c.entity_url = $4`,
		`INSERT INTO stream_dedupe (stream_id, ` + dedupeCols + `)
		 SELECT s.id, ` + prefixed(dedupeCols, "d.") + `
		 FROM generate_series($2::int, $3::int) g
		 JOIN streams t ON t.path = $4 || '/main'
		 JOIN stream_dedupe d ON d.stream_id = t.id
		 JOIN streams s ON s.path = $1 || g || '/main'`,
	}
	for _, q := range steps {
		if _, err := tx.Exec(ctx, q, prefix, from, to, tmpl); err != nil {
			return fmt.Errorf("%.60s…: %w", strings.Join(strings.Fields(q), " "), err)
		}
	}
	return nil
}

// prefixed qualifies each column of a list with p ("t.").
func prefixed(cols, p string) string {
	parts := strings.Split(cols, ", ")
	for i := range parts {
		parts[i] = p + parts[i]
	}
	return strings.Join(parts, ", ")
}

// fillBig makes /fill-big (JSON) with n copies of one appended message.
func fillBig(ctx context.Context, c *http.Client, pool *pgxpool.Pool, base string, n int) error {
	url := base + "/fill-big"
	if err := createStream(ctx, c, url, "application/json"); err != nil {
		return err
	}
	msg := jsonMessage(0, 0, 100)
	if status, _, body, err := do(ctx, c, http.MethodPost, url, jsonHdr, msg); err != nil || status/100 != 2 {
		return fmt.Errorf("append to /fill-big: %d %s %v", status, body, err)
	}
	// one message is at seq 1 with end_pos = its size; the copies continue the sequence
	_, err := pool.Exec(ctx, `
		WITH s AS (SELECT id FROM streams WHERE path = '/fill-big'),
		     m AS (SELECT stream_id, end_pos, data FROM stream_messages WHERE stream_id = (SELECT id FROM s) AND seq = 1),
		     ins AS (INSERT INTO stream_messages (stream_id, seq, end_pos, data)
		             SELECT m.stream_id, g, m.end_pos * g, m.data FROM m, generate_series(2, $1::int) g)
		UPDATE streams SET tail_seq = $1, tail_pos = (SELECT end_pos FROM m) * $1 WHERE id = (SELECT id FROM s)`, n)
	return err
}

// runTouch reads every filled entity once (GET /_electric/entities/<type>/e<i>), so that
// whatever the server caches per entity has been asked for; then it prints the server's
// resident memory when -server-pid is given.
func runTouch(args []string) error {
	fs := flag.NewFlagSet("touch", flag.ExitOnError)
	var c commonFlags
	c.register(fs, "http://127.0.0.1:4437")
	entities := fs.Int("entities", 1_000_000, "entities e0 … e<n-1> to read")
	typeName := fs.String("type", "fill", "their type")
	workers := fs.Int("c", 16, "concurrent readers")
	pid := fs.Int("server-pid", 0, "print this process's VmRSS afterwards")
	_ = fs.Parse(args)
	ctx, stop := signalContext()
	defer stop()
	client := newClient(*workers, false)
	jobs := make(chan int)
	errs := make(chan error, *workers)
	began := time.Now()
	for range *workers {
		go func() {
			for i := range jobs {
				url := fmt.Sprintf("%s/_electric/entities/%s/e%d", c.base(), *typeName, i)
				if status, _, body, err := do(ctx, client, http.MethodGet, url, nil, nil); err != nil || status != http.StatusOK {
					errs <- fmt.Errorf("GET %s: %d %.200s %v", url, status, body, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for i := 0; i < *entities; i++ {
		select {
		case jobs <- i:
		case err := <-errs:
			return err
		}
	}
	close(jobs)
	for range *workers {
		if err := <-errs; err != nil {
			return err
		}
	}
	fmt.Printf("read %d entities in %v\n", *entities, time.Since(began).Round(time.Second))
	if *pid > 0 {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", *pid))
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(line, "VmRSS:") || strings.HasPrefix(line, "VmHWM:") {
				fmt.Println(line)
			}
		}
	}
	return nil
}
