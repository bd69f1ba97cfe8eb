package wakereg

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/entityd/entityd/streamdb"
)

// ManifestEntry is what one `manifest` event a handler wrote to its own stream means for
// its wakes: the registrations of Key are replaced by Wake (removed when Wake is nil).
type ManifestEntry struct {
	Key  string
	Wake *Spec // SubscriberURL, SourceURL and the condition; nil: no registration
}

// ManifestEntries reads the manifest events among msgs (a handler's append to the main
// stream of subscriber), in order. Entries it does not understand register nothing, as
// in the reference; `schedule` entries belong to the scheduler.
func ManifestEntries(subscriber string, msgs [][]byte) []ManifestEntry {
	var out []ManifestEntry
	for _, raw := range msgs {
		if !strings.Contains(string(raw), `"manifest"`) {
			continue // cheap: most appends carry no manifest
		}
		var ev struct {
			Type    string          `json:"type"`
			Key     string          `json:"key"`
			Value   json.RawMessage `json:"value"`
			Headers struct {
				Operation string `json:"operation"`
			} `json:"headers"`
		}
		if json.Unmarshal(raw, &ev) != nil || ev.Type != "manifest" || ev.Key == "" {
			continue
		}
		if len(ev.Key) > MaxManifestKey {
			continue
		}
		e := ManifestEntry{Key: ev.Key}
		if ev.Headers.Operation != "delete" {
			e.Wake = manifestWake(subscriber, ev.Key, ev.Value)
		}
		out = append(out, e)
	}
	return out
}

// manifest is the part of a manifest entry's value that wakes depend on.
type manifest struct {
	Kind       string          `json:"kind"`
	EntityURL  *string         `json:"entity_url"`
	SourceType string          `json:"sourceType"`
	SourceRef  *string         `json:"sourceRef"`
	ID         *string         `json:"id"`
	Config     map[string]any  `json:"config"`
	Wake       json.RawMessage `json:"wake"`
}

func manifestWake(subscriber, key string, value json.RawMessage) *Spec {
	var m manifest
	if json.Unmarshal(value, &m) != nil {
		return nil
	}
	source := manifestSource(&m)
	if source == "" || len(m.Wake) == 0 {
		return nil
	}
	s := Spec{SubscriberURL: subscriber, SourceURL: source, ManifestKey: key, IncludeResponse: true}
	var word string
	if json.Unmarshal(m.Wake, &word) == nil {
		if word != "runFinished" {
			return nil
		}
		s.Condition = Condition{RunFinished: true}
		return &s
	}
	var w struct {
		On              string   `json:"on"`
		IncludeResponse *bool    `json:"includeResponse"`
		Collections     []any    `json:"collections"`
		Ops             []any    `json:"ops"`
		DebounceMs      *float64 `json:"debounceMs"`
		TimeoutMs       *float64 `json:"timeoutMs"`
	}
	if json.Unmarshal(m.Wake, &w) != nil {
		return nil
	}
	switch w.On {
	case "runFinished":
		s.Condition = Condition{RunFinished: true}
		if w.IncludeResponse != nil {
			s.IncludeResponse = *w.IncludeResponse
		}
		return &s
	case "change":
	default:
		return nil
	}
	if w.Collections != nil {
		s.Condition.Collections = []string{}
		for _, c := range w.Collections {
			if c, ok := c.(string); ok && c != "" && len(c) <= MaxCollectionBytes && len(s.Condition.Collections) < MaxCollections {
				s.Condition.Collections = append(s.Condition.Collections, c)
			}
		}
	}
	if w.Ops != nil {
		s.Condition.Ops = []string{}
		for _, o := range w.Ops {
			if o, ok := o.(string); ok && (o == "insert" || o == "update" || o == "delete") {
				s.Condition.Ops = append(s.Condition.Ops, o)
			}
		}
	}
	s.DebounceMs, s.TimeoutMs = delay(w.DebounceMs), delay(w.TimeoutMs)
	return &s
}

func delay(v *float64) int {
	if v == nil || *v < 0 || *v != *v {
		return 0
	}
	return int(min(*v, MaxDelayMs))
}

// manifestSource is the source URL a manifest entry observes ("" for none).
func manifestSource(m *manifest) string {
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	conf := func(name string) string {
		s, _ := m.Config[name].(string)
		return s
	}
	switch m.Kind {
	case "child", "observe":
		return str(m.EntityURL)
	case "shared-state":
		if id := str(m.ID); id != "" {
			return SharedStatePath(id)
		}
	case "source":
		switch m.SourceType {
		case "entity":
			if u := conf("entityUrl"); u != "" {
				return u
			}
			return str(m.SourceRef)
		case "cron":
			if expr := conf("expression"); expr != "" {
				return CronPath(expr, conf("timezone"))
			}
		case "entities":
			if ref := str(m.SourceRef); ref != "" {
				return "/_entities/" + ref
			}
		case "db":
			if ref := str(m.SourceRef); ref != "" {
				return SharedStatePath(ref)
			}
		case "pgSync":
			return conf("streamUrl")
		case "webhook":
			if u := conf("streamUrl"); u != "" {
				return u
			}
			if k := conf("endpointKey"); k != "" {
				if b := conf("bucket"); b != "" {
					return "/_webhooks/" + k + "/" + b
				}
				return "/_webhooks/" + k
			}
		}
	}
	return ""
}

// SharedStatePath is the stream of a shared-state id, as the runtime names it.
func SharedStatePath(id string) string { return "/_electric/shared-state/" + id }

// CronPath is the stream of a cron schedule, as the runtime names it: base64url of
// {"expression","timezone"} (UTC when no time zone is given).
func CronPath(expression, timezone string) string {
	if timezone == "" {
		timezone = "UTC"
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // JSON.stringify does not escape <, > and &
	_ = enc.Encode(struct {
		Expression string `json:"expression"`
		Timezone   string `json:"timezone"`
	}{expression, timezone})
	return "/_cron/" + base64.RawURLEncoding.EncodeToString([]byte(strings.TrimSuffix(b.String(), "\n")))
}

// ManifestStatements are the statements that apply entries for subscriber (created by
// createdBy) in the transaction of the append that carries them (AppendRequest.OnAdmit).
// The caller has decided access: an entry whose wake it refused has a nil Wake.
func ManifestStatements(subscriber, createdBy string, entries []ManifestEntry) []streamdb.Statement {
	var out []streamdb.Statement
	for _, e := range entries {
		if e.Wake == nil {
			out = append(out, streamdb.Statement{SQL: sqlDeleteManifest, Args: []any{subscriber, e.Key}})
			continue
		}
		w := e.Wake
		out = append(out, streamdb.Statement{SQL: sqlDeleteManifestOthers, Args: []any{subscriber, e.Key,
			w.SourceURL, string(w.Condition.JSON()), w.DebounceMs, w.TimeoutMs, w.IncludeResponse}})
		reg := Registration{Spec: *w, SourceStream: SourceStreamOf(w.SourceURL), CreatedBy: createdBy}
		out = append(out, reg.insert())
	}
	return out
}

// SourceStreamOf is the stream a source URL is read from, by the URL's shape: an
// entity's main stream for /<type>/<id>, else the URL is a stream path itself.
func SourceStreamOf(url string) string {
	if LooksLikeEntity(url) {
		return EntitySource(url)
	}
	return url
}
