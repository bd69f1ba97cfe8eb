package sqlfile

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoadSplitsNamedQueriesAndDropsTheirDocComments(t *testing.T) {
	fsys := fstest.MapFS{
		"a.sql": {Data: []byte("-- Queries of a.go.\n\n-- name: One\n-- the first one\nSELECT 1\n  FROM x\n\n-- name: Two\nSELECT 2 -- inline stays\n")},
		"b.sql": {Data: []byte("-- name: Three\nUPDATE t SET a = 1\n")},
	}
	s, err := Load("pkg", fsys)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Names(), ","); got != "One,Three,Two" {
		t.Fatalf("names %s", got)
	}
	if q, file := s.Get("One"), s.File("One"); q != "SELECT 1\n  FROM x" || file != "a.sql" {
		t.Fatalf("One = %q from %s", q, file)
	}
	if got := strings.Join(s.Unused(), ","); got != "Three,Two" {
		t.Fatalf("unused %s", got)
	}
	if q := s.Get("Two"); q != "SELECT 2 -- inline stays" {
		t.Fatalf("Two = %q", q)
	}
	if f := s.Fetched(); len(f) != 2 || f["One"] == "" {
		t.Fatalf("fetched %v", f)
	}
}

func TestFragmentsAndValuesFillPlaceholders(t *testing.T) {
	s, err := Load("pkg", fstest.MapFS{"x.sql": {Data: []byte(
		"-- fragment: cols\na, b\n\n-- name: One\nSELECT {{cols}} FROM t WHERE s = ANY('{{statuses}}')\n\n-- fragment: spare\nc\n")}})
	if err != nil {
		t.Fatal(err)
	}
	q := s.GetWith("One", map[string]string{"statuses": "{x,y}"})
	if q != "SELECT a, b FROM t WHERE s = ANY('{x,y}')" {
		t.Fatalf("One = %q", q)
	}
	if got := strings.Join(s.Unused(), ","); got != "spare" {
		t.Fatalf("unused %s", got)
	}
	for name, values := range map[string]map[string]string{
		"missing value": nil,
		"extra value":   {"statuses": "{x}", "other": "1"},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			s.GetWith("One", values)
		}()
	}
}

func TestLoadRefusesMalformedFiles(t *testing.T) {
	for name, text := range map[string]string{
		"duplicate":    "-- name: A\nSELECT 1\n-- name: A\nSELECT 2\n",
		"dup fragment": "-- fragment: A\na\n-- name: A\nSELECT 2\n",
		"empty":        "-- name: A\n-- only a comment\n\n-- name: B\nSELECT 1\n",
		"no name":      "SELECT 1\n",
		"blank name":   "-- name:\nSELECT 1\n",
		"spaced name":  "-- name: A B\nSELECT 1\n",
	} {
		if _, err := Load("pkg", fstest.MapFS{"x.sql": {Data: []byte(text)}}); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
	if _, err := Load("pkg", fstest.MapFS{}); err == nil {
		t.Error("an empty directory loaded")
	}
}

func TestGetPanicsOnAnUnknownName(t *testing.T) {
	s, err := Load("pkg", fstest.MapFS{"x.sql": {Data: []byte("-- name: A\nSELECT 1\n")}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `"B"`) {
			t.Fatalf("recovered %v", r)
		}
	}()
	s.Get("B")
}
