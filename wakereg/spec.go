package wakereg

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/entityd/entityd/internal/rawjson"
	"github.com/entityd/entityd/internal/textpolicy"
	"github.com/entityd/entityd/internal/validation"
)

// Bounds of what a registration may carry.
const (
	MaxURLBytes        = 1024
	MaxManifestKey     = 512
	MaxCollections     = 64
	MaxCollectionBytes = 256
	// MaxDelayMs bounds debounceMs and timeoutMs (a week).
	MaxDelayMs = 7 * 24 * 60 * 60 * 1000
)

// Condition is what a registration waits for: a run of the source finishing, or a change
// (an event of one of Collections, when given, with one of Ops, when given).
type Condition struct {
	RunFinished bool
	Collections []string
	Ops         []string
}

// JSON renders the condition as stored and compared: "runFinished" or
// {"on":"change","collections":[...]?,"ops":[...]?}.
func (c Condition) JSON() []byte {
	if c.RunFinished {
		return []byte(`"runFinished"`)
	}
	var o rawjson.Object
	o.String("on", "change")
	if c.Collections != nil {
		b, _ := json.Marshal(c.Collections)
		o.Raw("collections", b)
	}
	if c.Ops != nil {
		b, _ := json.Marshal(c.Ops)
		o.Raw("ops", b)
	}
	return o.Bytes()
}

func parseStoredCondition(raw []byte) Condition {
	if bytes.Equal(bytes.TrimSpace(raw), []byte(`"runFinished"`)) {
		return Condition{RunFinished: true}
	}
	var c struct {
		Collections []string `json:"collections"`
		Ops         []string `json:"ops"`
	}
	_ = json.Unmarshal(raw, &c)
	return Condition{Collections: c.Collections, Ops: c.Ops}
}

// Spec is a registration as a client asks for it (POST /_electric/wake, a spawn's wake).
type Spec struct {
	SubscriberURL   string
	SourceURL       string
	Condition       Condition
	DebounceMs      int
	TimeoutMs       int
	IncludeResponse bool
	ManifestKey     string
}

// ParseSpec decodes a registration body. withSource says whether sourceUrl is part of it
// (a spawn's wake has none: the child is the source). Members it does not know are
// ignored, as the reference's schema does; problems are reported under base.
func ParseSpec(raw json.RawMessage, base string, withSource bool) (Spec, validation.Details) {
	var d validation.Details
	s := Spec{IncludeResponse: true}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || len(bytes.TrimSpace(raw)) == 0 || bytes.TrimSpace(raw)[0] != '{' {
		d.Add(pointer(base), "must be object")
		return s, d
	}
	s.SubscriberURL = urlMember(m, base, "subscriberUrl", &d)
	if withSource {
		s.SourceURL = urlMember(m, base, "sourceUrl", &d)
	}
	if c, ok := m["condition"]; ok && !isNull(c) {
		s.Condition = conditionMember(c, pointer(base, "condition"), &d)
	} else {
		d.Add(pointer(base), "must have required property 'condition'")
	}
	s.DebounceMs = delayMember(m, base, "debounceMs", &d)
	s.TimeoutMs = delayMember(m, base, "timeoutMs", &d)
	if v, ok := m["includeResponse"]; ok {
		if err := json.Unmarshal(v, &s.IncludeResponse); err != nil || isNull(v) {
			d.Add(pointer(base, "includeResponse"), "must be boolean")
		}
	}
	if v, ok := m["manifestKey"]; ok {
		s.ManifestKey = stringMember(v, pointer(base, "manifestKey"), MaxManifestKey, &d)
	}
	return s, d
}

// ParseUnregister decodes POST /_electric/wake/unregister's body.
func ParseUnregister(raw json.RawMessage) (subscriber string, source, manifestKey *string, d validation.Details) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		d.Add("/", "must be object")
		return
	}
	subscriber = urlMember(m, "", "subscriberUrl", &d)
	if v, ok := m["sourceUrl"]; ok {
		s := stringMember(v, "/sourceUrl", MaxURLBytes, &d)
		source = &s
	}
	if v, ok := m["manifestKey"]; ok {
		s := stringMember(v, "/manifestKey", MaxManifestKey, &d)
		manifestKey = &s
	}
	return
}

func urlMember(m map[string]json.RawMessage, base, name string, d *validation.Details) string {
	v, ok := m[name]
	if !ok {
		d.Add(pointer(base), "must have required property '"+name+"'")
		return ""
	}
	s := stringMember(v, pointer(base, name), MaxURLBytes, d)
	if s != "" {
		if p := textpolicy.CheckPath(s, MaxURLBytes); p != "" {
			d.Add(pointer(base, name), p)
			return ""
		}
	}
	return s
}

func stringMember(v json.RawMessage, path string, max int, d *validation.Details) string {
	if kindOf(v) != '"' {
		d.Add(path, "must be string")
		return ""
	}
	s, p := textpolicy.CheckString(v, textpolicy.Name)
	if p != "" {
		d.Add(path, p)
		return ""
	}
	if len(s) > max {
		d.Add(path, "must be at most "+itoa(max)+" bytes")
		return ""
	}
	return s
}

func delayMember(m map[string]json.RawMessage, base, name string, d *validation.Details) int {
	v, ok := m[name]
	if !ok || isNull(v) {
		return 0
	}
	var f float64
	if kindOf(v) != 'n' || json.Unmarshal(v, &f) != nil {
		d.Add(pointer(base, name), "must be number")
		return 0
	}
	if f < 0 || f > MaxDelayMs || math.IsNaN(f) {
		d.Add(pointer(base, name), "must be between 0 and "+itoa(MaxDelayMs))
		return 0
	}
	return int(f)
}

var validOps = []string{"insert", "update", "delete"}

func conditionMember(v json.RawMessage, path string, d *validation.Details) Condition {
	switch kindOf(v) {
	case '"':
		var s string
		_ = json.Unmarshal(v, &s)
		if s == "runFinished" {
			return Condition{RunFinished: true}
		}
	case '{':
		var c struct {
			On          json.RawMessage   `json:"on"`
			Collections []json.RawMessage `json:"collections"`
			Ops         []json.RawMessage `json:"ops"`
		}
		if err := json.Unmarshal(v, &c); err != nil {
			d.Add(path, "collections and ops must be arrays")
			return Condition{}
		}
		var on string
		_ = json.Unmarshal(c.On, &on)
		if on == "runFinished" {
			// the runtime's own spelling of the condition ({on:"runFinished"})
			return Condition{RunFinished: true}
		}
		if on != "change" {
			d.Add(path+"/on", `must be "change"`)
			return Condition{}
		}
		var out Condition
		if c.Collections != nil {
			if len(c.Collections) > MaxCollections {
				d.Add(path+"/collections", "must have at most "+itoa(MaxCollections)+" items")
				return Condition{}
			}
			out.Collections = []string{}
			for i, raw := range c.Collections {
				s := stringMember(raw, path+"/collections/"+itoa(i), MaxCollectionBytes, d)
				if s != "" && !slices.Contains(out.Collections, s) {
					out.Collections = append(out.Collections, s)
				}
			}
		}
		if c.Ops != nil {
			out.Ops = []string{}
			for i, raw := range c.Ops {
				var op string
				if json.Unmarshal(raw, &op) != nil || !slices.Contains(validOps, op) {
					d.Add(path+"/ops/"+itoa(i), "must be insert, update or delete")
					continue
				}
				if !slices.Contains(out.Ops, op) {
					out.Ops = append(out.Ops, op)
				}
			}
		}
		return out
	}
	d.Add(path, `must be "runFinished" or {"on":"change", collections?, ops?}`)
	return Condition{}
}

func pointer(base string, names ...string) string {
	p := base
	for _, n := range names {
		p += "/" + n
	}
	if p == "" {
		return "/"
	}
	return p
}

func kindOf(v json.RawMessage) byte {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return 0
	}
	switch c := v[0]; {
	case c == '"', c == '{', c == '[':
		return c
	case c == 'n':
		return 0
	case c == 't', c == 'f':
		return 'b'
	default:
		return 'n'
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }
