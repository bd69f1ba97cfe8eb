-- Queries of seed.go.

-- name: SeedStatic
INSERT INTO slash_commands (entity_url, name, description, arguments, source, updated_at, static_def)
  SELECT $1, u.name, u.description, u.arguments, 'static', $2, u.static_def
  FROM unnest($3::text[], $4::text[], $5::jsonb[], $6::jsonb[]) AS u(name, description, arguments, static_def)
