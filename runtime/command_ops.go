package runtime

import (
	"fmt"

	"github.com/entityd/entityd/slashcmd"
)

// CommandOp is one change a handler made to its entity's slash commands. It is data, not
// a closure, so that a handler running in another process can send it to the server,
// which replays it against the stored layers when the wake commits.
type CommandOp struct {
	Op            string                     `json:"op"` // register, unregister or replace_owned
	Registration  *SlashCommandRegistration  `json:"registration,omitempty"`
	Name          string                     `json:"name,omitempty"`
	Owner         string                     `json:"owner,omitempty"`
	Registrations []SlashCommandRegistration `json:"registrations,omitempty"`
}

// Apply makes the change in set.
func (o CommandOp) Apply(set *slashcmd.Set) error {
	switch o.Op {
	case "register":
		if o.Registration == nil {
			return fmt.Errorf("runtime: a register operation needs a registration")
		}
		return set.Register(*o.Registration)
	case "unregister":
		set.Unregister(o.Name, o.Owner)
		return nil
	case "replace_owned":
		return set.ReplaceOwned(o.Owner, o.Registrations)
	}
	return fmt.Errorf("runtime: unknown slash-command operation %q", o.Op)
}
