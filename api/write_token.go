package api

import (
	"net/http"

	"github.com/entityd/entityd/internal/httpx"
)

// WriteToken is the write token a request presents to append to an entity's stream or
// to send as its agent: Electric-Claim-Token (a claim's token), else Authorization: Bearer.
func WriteToken(r *http.Request) string {
	if t := r.Header.Get("Electric-Claim-Token"); t != "" {
		return t
	}
	return httpx.Bearer(r)
}
