package main

import (
	"testing"

	"github.com/entityd/entityd/wire/composer"
)

// The payloads send posts must be valid composer_input, spans in UTF-16 units included.
func TestComposerInputIsValid(t *testing.T) {
	for _, size := range []int{0, 300, 1000} {
		for _, pr := range []int{100, 555, 999} {
			p := composerInput(pr, size)
			if len(p) < size {
				t.Errorf("size %d: payload has %d bytes", size, len(p))
			}
			if d := composer.Validate(p, composer.Limits{}); d != nil {
				t.Fatalf("payload %s: %v", p, d)
			}
			c, err := composer.Parse(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Nodes) != 3 || c.Nodes[2].Kind != "branch" || c.Nodes[1].Name != "worktree" {
				t.Fatalf("nodes: %+v", c.Nodes)
			}
		}
	}
}

func TestJSONMessageSize(t *testing.T) {
	for _, n := range []int{0, 7, 123456789} {
		if m := jsonMessage(63, n, 100); len(m) != 100 {
			t.Fatalf("%s has %d bytes", m, len(m))
		}
	}
}

func TestCheckSequence(t *testing.T) {
	body := append(append([]byte("["), jsonMessage(1, 0, 100)...), ',')
	body = append(append(body, jsonMessage(1, 1, 100)...), ']')
	next, err := checkSequence(body, 0)
	if err != nil || next != 2 {
		t.Fatalf("next %d, err %v", next, err)
	}
	if _, err := checkSequence(body, 1); err == nil {
		t.Fatal("a gap was not noticed")
	}
}
