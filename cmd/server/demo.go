package main

import (
	"github.com/entityd/entityd/examples/assistant"
	"github.com/entityd/entityd/runtime"
)

// demoDefinitions are the entity types a fresh `make run` serves.
func demoDefinitions(skillsDir string) []runtime.EntityDefinition {
	return []runtime.EntityDefinition{assistant.Definition(skillsDir)}
}
