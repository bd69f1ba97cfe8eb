// Package doccheck holds the tests that keep the documentation true: the README's
// ten-minute tour (and the other runnable walkthroughs under docs/) are run, command by
// command, against a fresh server started as `make run` starts one, and every relative
// link between the Markdown files must resolve, anchors included.
//
// A walkthrough marks what is run: every ```sh block between
//
//	<!-- tour:start -->  and  <!-- tour:end -->
//
// is run in order in one bash session with `set -euo pipefail`, with ENTITYD set to the
// test server's URL (the blocks default it to http://localhost:4437 for a reader). An
//
//	<!-- tour:expect TEXT -->
//
// line after a block requires TEXT in that block's output. Blocks outside the markers
// (jwt-mode examples, commands that need a second server) are not run.
package doccheck
