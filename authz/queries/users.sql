-- Queries of users.go.

-- name: NoteUser
INSERT INTO users (id) VALUES ($1) ON CONFLICT (id) DO NOTHING
