package schedule

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// CronPrefix is where cron streams live: /_cron/<base64url of {"expression","timezone"}>,
// the path Electric's runtime computes itself for observe(cron(...)).
const CronPrefix = "/_cron/"

// Bounds of a cron spec.
const (
	MaxExpressionBytes = 256
	MaxTimezoneBytes   = 64
)

// parser reads the cron-parser syntax the runtime uses: five fields, or six with
// seconds first, and the @-descriptors.
var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Spec is a cron expression in a time zone (an IANA name; UTC when none is given).
type Spec struct {
	Expression string
	Timezone   string

	sched cron.Schedule
	loc   *time.Location
}

// InvalidError is a spec that cannot be used: Field is "expression" or "timezone".
type InvalidError struct {
	Field, Message string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Message }

// Resolve checks expression and timezone and returns the spec.
func Resolve(expression, timezone string) (*Spec, error) {
	if timezone == "" {
		timezone = "UTC"
	}
	if len(timezone) > MaxTimezoneBytes || timezone == "Local" || strings.ContainsAny(timezone, " \\") {
		return nil, &InvalidError{"timezone", fmt.Sprintf("Invalid cron timezone: %q", timezone)}
	}
	loc, err := time.LoadLocation(timezone)
	if err != nil {
		return nil, &InvalidError{"timezone", fmt.Sprintf("Invalid cron timezone: %q", timezone)}
	}
	// robfig/cron reads a CRON_TZ= or TZ= prefix as a zone of its own: the zone is the
	// timezone field's alone.
	if expression == "" || len(expression) > MaxExpressionBytes || strings.Contains(expression, "TZ=") {
		return nil, &InvalidError{"expression", fmt.Sprintf("Invalid cron expression: %q", expression)}
	}
	sched, err := parser.Parse(expression)
	if err != nil {
		return nil, &InvalidError{"expression", fmt.Sprintf("Invalid cron expression: %q (%v)", expression, err)}
	}
	return &Spec{Expression: expression, Timezone: timezone, sched: sched, loc: loc}, nil
}

// Next is the first time the spec fires after t (in its time zone); zero if never.
func (s *Spec) Next(t time.Time) time.Time {
	return s.sched.Next(t.In(s.loc))
}

// Path is the spec's cron stream: the base64url (unpadded) of
// JSON.stringify({expression, timezone}), byte for byte what the runtime computes.
func (s *Spec) Path() string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // JSON.stringify leaves <, > and & as they are
	_ = enc.Encode(struct {
		Expression string `json:"expression"`
		Timezone   string `json:"timezone"`
	}{s.Expression, s.Timezone})
	return CronPrefix + base64.RawURLEncoding.EncodeToString(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}
