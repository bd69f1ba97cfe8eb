package entityapi

import (
	"testing"

	"github.com/entityd/entityd/internal/jsonbody"
)

// FuzzForkPointer: fork_pointer either yields a pointer within the documented bounds
// (offset null or at most 64 bytes, sub_offset an integer from 1 to 2^53) or a detail
// that refuses the request; it never panics.
func FuzzForkPointer(f *testing.F) {
	for _, s := range []string{
		`{"fork_pointer":{"offset":null,"sub_offset":1}}`,
		`{"fork_pointer":{"offset":"0000000000000001_0000000000000042","sub_offset":3}}`,
		`{"fork_pointer":{"offset":5,"sub_offset":1}}`, `{"fork_pointer":{"sub_offset":1.5}}`,
		`{"fork_pointer":{"offset":null,"sub_offset":1e300}}`, `{"fork_pointer":[]}`, `{"fork_pointer":null}`,
		`{"fork_pointer":{"offset":"\u0000","sub_offset":-1}}`, `{"fork_pointer":{"offset":null,"sub_offset":9007199254740993}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := jsonbody.Parse(data)
		if err != nil || !b.Present("fork_pointer") {
			return
		}
		fp := forkPointer(b)
		if fp == nil {
			if len(b.Details) == 0 {
				t.Fatal("a refused pointer must say why")
			}
			return
		}
		if len(b.Details) != 0 {
			t.Fatalf("a pointer with details: %v", b.Details)
		}
		if fp.Sub < 1 || fp.Sub > maxForkSubOffset {
			t.Fatalf("sub_offset %d out of bounds", fp.Sub)
		}
		if fp.Offset != nil && len(*fp.Offset) > maxForkOffsetLength {
			t.Fatalf("offset of %d bytes", len(*fp.Offset))
		}
	})
}
