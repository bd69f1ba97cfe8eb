package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"unicode/utf16"
)

// composerPart is a piece of a composer source: plain text, or a node covering its text.
type composerPart struct {
	text string
	node map[string]any // nil for plain text; kind and name/path, spans are filled in
}

// composerNode is one node on the wire, members in the order clients send them.
type composerNode struct {
	Kind  string `json:"kind"`
	Start int    `json:"start"`
	End   int    `json:"end"`
	Raw   string `json:"raw"`
	Name  string `json:"name"`
}

type composerPayload struct {
	Source string         `json:"source"`
	Nodes  []composerNode `json:"nodes"`
}

// composerInput builds the payload send posts: a review request with two slash commands
// and a branch mention, as the desktop composer serializes it. The source holds an em
// dash and an emoji before the later nodes, so their spans are UTF-16 offsets that differ
// from byte and rune offsets (what a correct client must send). Trailing plain text pads
// the payload's JSON to at least minBytes.
func composerInput(pr int, minBytes int) []byte {
	parts := []composerPart{
		{text: "/pr-review", node: map[string]any{"kind": "slash_command", "name": "pr-review"}},
		{text: fmt.Sprintf(" %d — in ", pr)},
		{text: "/worktree", node: map[string]any{"kind": "slash_command", "name": "worktree"}},
		{text: " 🚀 see "},
		{text: "@feature/bench-load", node: map[string]any{"kind": "branch", "name": "feature/bench-load"}},
	}
	build := func(tail string) []byte {
		var p composerPayload
		var src strings.Builder
		units := 0
		for _, part := range parts {
			n := len(utf16.Encode([]rune(part.text)))
			if part.node != nil {
				p.Nodes = append(p.Nodes, composerNode{
					Kind: part.node["kind"].(string), Start: units, End: units + n,
					Raw: part.text, Name: part.node["name"].(string),
				})
			}
			src.WriteString(part.text)
			units += n
		}
		src.WriteString(tail)
		p.Source = src.String()
		b, err := json.Marshal(p)
		if err != nil {
			panic(err)
		}
		return b
	}
	const filler = " - check the retry path and the error envelope, keep the diff small, add a regression test."
	tail := ""
	b := build(tail)
	for i := 0; len(b) < minBytes; i++ {
		tail += filler[i%len(filler) : i%len(filler)+1]
		b = build(tail)
	}
	return b
}

// sendBody is the body of one send.
func sendBody(payload []byte) []byte {
	b := make([]byte, 0, len(payload)+48)
	b = append(b, `{"type":"composer_input","payload":`...)
	b = append(b, payload...)
	return append(b, '}')
}

func runPayload(args []string) error {
	fs := flag.NewFlagSet("payload", flag.ExitOnError)
	size := fs.Int("payload-bytes", 300, "minimum size of the payload JSON")
	pr := fs.Int("pr", 123, "the PR number in the source")
	wrap := fs.Bool("body", false, "print the whole send body, not just the payload")
	_ = fs.Parse(args)
	b := composerInput(*pr, *size)
	if *wrap {
		b = sendBody(b)
	}
	_, err := os.Stdout.Write(append(b, '\n'))
	return err
}
