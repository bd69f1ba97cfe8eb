package runtime

import "github.com/entityd/entityd/slashcmd"

// SlashCommands manages the woken entity's slash commands with the layer rules of
// package slashcmd: each owner has one layer per command name, the newest registration is
// on top, any dynamic layer beats the static command, unregistering reveals the next
// layer, then the static command. Reads see this run's own changes; the changes are
// committed with the wake's acknowledgement, replayed against the stored state, and
// changing nothing (an identical registration) writes nothing.
type SlashCommands struct {
	c   *Context
	set *slashcmd.Set
}

func (s *SlashCommands) load() (*slashcmd.Set, error) {
	if s.set != nil {
		return s.set, nil
	}
	set, err := s.c.host.LoadCommands(s.c, s.c.Entity.URL, s.c.def)
	if err != nil {
		return nil, err
	}
	s.set = set
	return s.set, nil
}

func (s *SlashCommands) apply(op CommandOp) error {
	set, err := s.load()
	if err != nil {
		return err
	}
	if err := op.Apply(set); err != nil {
		return err
	}
	s.c.eff.SlashCommands = append(s.c.eff.SlashCommands, op)
	return nil
}

// Get returns the effective command name.
func (s *SlashCommands) Get(name string) (SlashCommandRow, bool, error) {
	set, err := s.load()
	if err != nil {
		return SlashCommandRow{}, false, err
	}
	row, ok := set.Get(name)
	return row, ok, nil
}

// List returns the effective commands sorted by name.
func (s *SlashCommands) List() ([]SlashCommandRow, error) {
	set, err := s.load()
	if err != nil {
		return nil, err
	}
	return set.List(), nil
}

// Register puts reg on top of its name's layers (owner "handler" when empty).
func (s *SlashCommands) Register(reg SlashCommandRegistration) error {
	return s.apply(CommandOp{Op: "register", Registration: &reg})
}

// Unregister removes owner's layer for name ("" = the top layer's owner).
func (s *SlashCommands) Unregister(name, owner string) error {
	return s.apply(CommandOp{Op: "unregister", Name: name, Owner: owner})
}

// ReplaceOwned makes owner's registrations exactly regs; the whole set is validated
// first and applied as one change.
func (s *SlashCommands) ReplaceOwned(owner string, regs []SlashCommandRegistration) error {
	return s.apply(CommandOp{Op: "replace_owned", Owner: owner, Registrations: regs})
}
