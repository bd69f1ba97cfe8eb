package webhooksrc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/entityd/entityd/internal/schemas"
	"github.com/entityd/entityd/internal/textpolicy"
	"github.com/entityd/entityd/internal/validation"
)

// Bounds of a source's definition.
const (
	MaxBuckets          = 32
	MaxBucketsBytes     = 64 << 10 // the buckets' JSON, schemas included
	MaxTemplateBytes    = 256
	MaxTemplateSegments = 16
	MaxLabelBytes       = 256
	MaxDescriptionBytes = 4096
	MaxBucketPathBytes  = 512
	MaxParamsBytes      = 4096
)

var paramName = regexp.MustCompile(`^:[A-Za-z_][A-Za-z0-9_]*$`)

// ParseBuckets checks a definition's buckets: unique keys, templates of literal segments
// (the runtime's rule) and ":name" parameters, and params schemas that compile.
func ParseBuckets(raw json.RawMessage) ([]Bucket, validation.Details) {
	var d validation.Details
	if len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, d
	}
	if len(raw) > MaxBucketsBytes {
		d.Add("/buckets", "must be at most "+strconv.Itoa(MaxBucketsBytes)+" bytes of JSON")
		return nil, d
	}
	var out []Bucket
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		d.Add("/buckets", "must be an array of {key, label, description?, pathTemplate, paramsSchema, eventTypes?, filters?}")
		return nil, d
	}
	if len(out) > MaxBuckets {
		d.Add("/buckets", "must have at most "+strconv.Itoa(MaxBuckets)+" items")
		return nil, d
	}
	seen := map[string]bool{}
	for i := range out {
		b := &out[i]
		at := "/buckets/" + strconv.Itoa(i)
		if !ValidKey(b.Key) {
			d.Add(at+"/key", "must match ^[a-z0-9][a-z0-9._-]{0,62}$")
		} else if seen[b.Key] {
			d.Add(at+"/key", "must be unique")
		}
		seen[b.Key] = true
		if b.Label == "" {
			b.Label = b.Key
		}
		checkText(&d, at+"/label", b.Label, MaxLabelBytes)
		checkText(&d, at+"/description", b.Description, MaxDescriptionBytes)
		if p := checkTemplate(b.PathTemplate); p != "" {
			d.Add(at+"/pathTemplate", p)
		}
		if len(b.ParamsSchema) == 0 || bytes.Equal(bytes.TrimSpace(b.ParamsSchema), []byte("null")) {
			b.ParamsSchema = json.RawMessage(`{"type":"object"}`)
		}
		if _, err := schemas.Compile(b.ParamsSchema); err != nil {
			d.Add(at+"/paramsSchema", "must be a JSON Schema: "+err.Error())
		}
		for j, t := range b.EventTypes {
			checkText(&d, at+"/eventTypes/"+strconv.Itoa(j), t, 128)
		}
		if len(b.Filters) > 32 {
			d.Add(at+"/filters", "must have at most 32 items")
		}
		for j, f := range b.Filters {
			var key struct {
				Key string `json:"key"`
			}
			if json.Unmarshal(f, &key) != nil || !ValidKey(key.Key) {
				d.Add(at+"/filters/"+strconv.Itoa(j)+"/key", "must match ^[a-z0-9][a-z0-9._-]{0,62}$")
			}
		}
	}
	if len(d) == 0 {
		d = append(d, textpolicy.CheckJSON(raw, "/buckets", textpolicy.Text)...)
	}
	return out, d
}

func checkText(d *validation.Details, at, s string, max int) {
	if len(s) > max {
		d.Add(at, "must be at most "+strconv.Itoa(max)+" bytes")
	} else if !textpolicy.Valid(s, textpolicy.Text) {
		d.Add(at, "must be UTF-8 without control characters")
	}
}

func checkTemplate(t string) string {
	if t == "" || len(t) > MaxTemplateBytes {
		return "must be 1-" + strconv.Itoa(MaxTemplateBytes) + " bytes"
	}
	segs := strings.Split(t, "/")
	if len(segs) > MaxTemplateSegments {
		return "must have at most " + strconv.Itoa(MaxTemplateSegments) + " segments"
	}
	for _, s := range segs {
		if strings.HasPrefix(s, ":") {
			if !paramName.MatchString(s) {
				return "parameters are :name with name [A-Za-z_][A-Za-z0-9_]*"
			}
			continue
		}
		if !validSegment(s) {
			return "segments must be non-empty, not . or .., of [A-Za-z0-9._~!$&'()*+,;=:@-]"
		}
	}
	return ""
}

func validSegment(s string) bool {
	return s != "" && s != "." && s != ".." && segmentPattern.MatchString(s)
}

// Render fills the template with params (checked against the params schema first): the
// bucket path a subscription observes.
func (b *Bucket) Render(cache *schemas.Cache, params json.RawMessage) (string, error) {
	if len(params) > MaxParamsBytes {
		return "", fmt.Errorf("params must be at most %d bytes of JSON", MaxParamsBytes)
	}
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	s, err := cache.Get(b.ParamsSchema)
	if err != nil {
		return "", fmt.Errorf("invalid paramsSchema for bucket %q", b.Key)
	}
	if d := s.Validate(params); len(d) > 0 {
		return "", fmt.Errorf("bucket params do not match paramsSchema for %q: %s", b.Key, describe(d))
	}
	var values map[string]json.RawMessage
	if err := json.Unmarshal(params, &values); err != nil {
		return "", fmt.Errorf("params must be an object")
	}
	segs := strings.Split(b.PathTemplate, "/")
	for i, seg := range segs {
		name, ok := strings.CutPrefix(seg, ":")
		if !ok {
			continue
		}
		v, ok := values[name]
		if !ok {
			return "", fmt.Errorf("missing bucket parameter: %s", name)
		}
		var x any
		_ = json.Unmarshal(v, &x)
		var str string
		switch x := x.(type) {
		case string:
			str = x
		case float64:
			str = strconv.FormatFloat(x, 'f', -1, 64)
		case bool:
			str = strconv.FormatBool(x)
		default:
			return "", fmt.Errorf("bucket parameter %q must be a scalar value", name)
		}
		if str == "" {
			return "", fmt.Errorf("bucket parameter %q must not be empty", name)
		}
		str = url.PathEscape(str)
		if !validSegment(str) {
			return "", fmt.Errorf("bucket parameter %q must be a path segment of [A-Za-z0-9._~!$&'()*+,;=:@-]", name)
		}
		segs[i] = str
	}
	return strings.Join(segs, "/"), nil
}

// Matches reports whether a delivery's bucket path fits the template: as many segments,
// each a parameter or equal to the literal.
func (b *Bucket) Matches(path string) bool {
	segs, tmpl := strings.Split(path, "/"), strings.Split(b.PathTemplate, "/")
	if len(segs) != len(tmpl) {
		return false
	}
	for i, t := range tmpl {
		if !validSegment(segs[i]) || (!strings.HasPrefix(t, ":") && t != segs[i]) {
			return false
		}
	}
	return true
}

// DeliveryBucket checks the bucket path of a delivery URL ("" for the root): it must fit
// one of the source's bucket templates.
func (s *Source) DeliveryBucket(path string) (string, bool) {
	if path == "" {
		return "", true
	}
	if len(path) > MaxBucketPathBytes {
		return "", false
	}
	for i := range s.Buckets {
		if s.Buckets[i].Matches(path) {
			return path, true
		}
	}
	return "", false
}

// describe renders details as "path message; ..." (the reference's wording of them).
func describe(d validation.Details) string {
	parts := make([]string, 0, len(d))
	for _, x := range d {
		parts = append(parts, x.Path+" "+x.Message)
	}
	return strings.Join(parts, "; ")
}
