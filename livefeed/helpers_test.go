package livefeed_test

import (
	"github.com/entityd/entityd/api"
	"github.com/entityd/entityd/internal/testserver"
)

func apiConfig(key *testserver.JWTKey) api.Config { return api.Config{Auth: key.Auth} }
