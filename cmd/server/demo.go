package main

import (
	"github.com/entityd/entityd/inbox"
	"github.com/entityd/entityd/runtime"
)

// demoDefinitions are the entity types a fresh `make run` serves.
func demoDefinitions(skillsDir string) []runtime.EntityDefinition {
	return []runtime.EntityDefinition{assistant(skillsDir)}
}

type composerInput = inbox.ComposerInput
