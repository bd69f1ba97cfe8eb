// Command entityd-bench is the load tool behind bench/run.sh: closed-loop HTTP benchmarks
// of the entity send path and of the Durable Streams protocol, against entityd or any
// Durable Streams server (the Node reference included).
//
//	entityd-bench send     -url http://127.0.0.1:4437 -c 16 -d 10s
//	entityd-bench append   -url http://127.0.0.1:4438 -streams 64 -writers 64
//	entityd-bench longpoll -url http://127.0.0.1:4437 -n 500
//	entityd-bench catchup  -url http://127.0.0.1:4437 -messages 100000
//	entityd-bench fill     -url http://127.0.0.1:4437 -database-url postgres://… -entities 1000000
//	entityd-bench pages    -url http://127.0.0.1:4437 -path /fill-big -n 200
//	entityd-bench fanout   -url http://127.0.0.1:4437 -n 10000 -server-pid <pid>
//	entityd-bench commands -url http://127.0.0.1:4437 -c 64 -d 10s
//	entityd-bench slowread -url http://127.0.0.1:4437 -server-pid <pid> -readers 150 -appenders 96
//	entityd-bench summary  -dir bench/results/<run>
//	entityd-bench payload  (prints one composer_input payload, for pgbench.sh)
//	entityd-bench wake-server -addr-file F  /  wake-load -url … -ctl … -mode latency|throughput
//	entityd-bench webhook  -url http://127.0.0.1:4437 -mode latency|throughput -entities 100 -rate 500
//	entityd-bench tarpit   -url http://127.0.0.1:4437 -tarpit 150 -healthy 20
//
// Every benchmark prints a human-readable table, or with -json one JSON object (also
// written to -out FILE when given). Latencies are exact: every sample is kept and sorted.
// The load generator runs on the same machine as the server; on a small box it takes
// CPU from the server, and the numbers say so only if the reader is told.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	args := os.Args[2:]
	switch os.Args[1] {
	case "jwt":
		err = runJWT(args)
	case "send":
		err = runSend(args)
	case "append":
		err = runAppend(args)
	case "longpoll":
		err = runLongPoll(args)
	case "fill":
		err = runFill(args)
	case "pages":
		err = runPages(args)
	case "touch":
		err = runTouch(args)
	case "catchup":
		err = runCatchup(args)
	case "fanout":
		err = runFanout(args)
	case "commands":
		err = runCommands(args)
	case "slowread":
		err = runSlowRead(args)
	case "summary":
		err = runSummary(args)
	case "payload":
		err = runPayload(args)
	case "wake":
		err = runWake(args)
	case "webhook":
		err = runWebhook(args)
	case "tarpit":
		err = runTarpit(args)
	case "wake-server":
		err = runWakeServer(args)
	case "wake-load":
		err = runWakeLoad(args)
	case "wake-summary":
		err = runWakeSummary(args)
	case "-h", "-help", "--help", "help":
		usage()
		return
	default:
		fmt.Fprintf(os.Stderr, "entityd-bench: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "entityd-bench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage: entityd-bench <command> [flags]

commands:
  send      closed-loop POST /_electric/entities/bench/<id>/send (composer_input) [entityd only]
  append    closed-loop Durable Streams appends of 100-byte JSON messages
  longpoll  long-poll round trip: append while a reader waits, time until the reader has it
  catchup   fill a stream, then time reading it from the start
  fill      fill a database fast: clones of a real spawned entity (-entities) and a plain
            stream of -big-stream messages, for the flat-cost benchmarks
  pages     catch-up reads from the middle of a long stream: time per page
  touch     read every filled entity once, then print the server's resident memory
  fanout    N SSE subscribers to one entity's slash-command collection: memory per idle
            subscriber, and the delivery latency of registrations to all of them
  commands  closed-loop GET of an entity's slash-command list (200 commands), revalidating
            with If-None-Match (304) or, with -no-etag, fetching the full list
  webhook   a webhook handler in this process, dispatched to by a type (one subscription per
            entity): send → wake latency at -rate (-mode latency), or send → wake → claim →
            write → done cycles per second (-mode throughput)
  slowread  slow readers of one large message, then concurrent large appends: the server's
            peak RSS and /_electric/health latency meanwhile (bench/slowread.sh)
  tarpit    one type's webhook never answers (-tarpit wakes hang), another's answers at once:
            send → wake latency of the healthy one while the tarpit's wakes hang (bench/tarpit.sh)
  summary   read the JSON results of bench/run.sh and print the markdown summary
  jwt       make a key pair for a jwt-mode server: write the PEM public key (-pub), print a token (-sub)
  payload   print one composer_input payload (what send posts), e.g. for pgbench
  wake-server  entityd with a recording no-op Go handler (type bench) + a control port
  wake-load    drive a wake-server: send→handler latency (-mode latency) or
               end-to-end throughput (-mode throughput); bench/wake.sh runs both
  wake         wake-server and wake-load in one process (CPU split not separable)
  wake-summary read the JSON results of bench/wake.sh and print the markdown summary

Run "entityd-bench <command> -h" for the flags of a command.
`)
}
