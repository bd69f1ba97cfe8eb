package migrations

// Owners names the one package that owns each table: only that package writes the
// table or names it in SQL, and others go through its typed methods. A test in this
// package holds every Go file of the module to it, and every table a migration creates
// must be listed here.
var Owners = map[string]string{
	"streams":                 "streamdb",
	"stream_messages":         "streamdb",
	"stream_producers":        "streamdb",
	"stream_dedupe":           "streamdb",
	"stream_listeners":        "streamdb",
	"entity_types":            "entity",
	"entities":                "entity",
	"slash_commands":          "slashcmd/slashdb",
	"slash_command_layers":    "slashcmd/slashdb",
	"entity_wake":             "wake",
	"wake_holders":            "wake",
	"inbox_held":              "wake",
	"wake_failures":           "wake",
	"wake_timers":             "wake",
	"wake_observations":       "wake",
	"delayed_sends":           "inbox",
	"ds_subscriptions":        "dssub",
	"ds_subscription_streams": "dssub",
	"ds_keys":                 "dssub",
	"ds_state":                "dssub",
	"ds_write_tokens":         "dssub",
	"shape_log":               "shapes",
	"shape_state":             "shapes",
	"runners":                 "external",
	"entity_grants":           "authz",
	"type_grants":             "authz",
	"stream_grants":           "authz",
	"wake_registrations":      "wakereg",
	"wake_sources":            "wakereg",
	"users":                   "authz",
	"shared_state_links":      "authz",
	"cron_streams":            "schedule",
	"cron_schedules":          "schedule",
	"entity_observations":     "membership",
	"observation_members":     "membership",
	"mcp_sessions":            "mcpserve",
	"entity_fork_locks":       "entity",
	"webhook_sources":         "webhooksrc",
	"attachments":             "attachment",
	"pg_sync_sources":         "pgsync",
	"pg_sync_state":           "pgsync",
}

// Published are read-only views an owner offers to other packages for joins (see
// migration 012): anyone may read them, nobody writes them.
var Published = map[string]string{
	"stream_heads":    "streamdb",
	"entity_statuses": "entity",
	// the rows of Electric shapes, in Electric's text encoding (migration 016)
	"entity_shape_rows":      "entity",
	"entity_type_shape_rows": "entity",
	// the shapes Electric's web UI reads besides those (migration 025)
	"runner_shape_rows":             "external",
	"runner_diagnostics_shape_rows": "external",
	"user_shape_rows":               "authz",
	"entity_permission_shape_rows":  "authz",
}
