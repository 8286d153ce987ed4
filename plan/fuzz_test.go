package plan_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/codeboost/codeboost/plan"
	"github.com/google/go-cmp/cmp"
)

// FuzzParse: Parse never panics; it refuses with a *plan.Error that says
// what is wrong, or returns a document whose JSON is a document that parses
// to an equal one, and whose items' specs read back as the same items.
// The seed corpus is testdata/fuzz/FuzzParse; run it for longer with
// go test ./plan -run '^$' -fuzz FuzzParse -fuzztime 30s.
func FuzzParse(f *testing.F) {
	f.Add([]byte(doc(item())))
	f.Add([]byte(doc(item(files(`{"op": "rename", "path": "a/b.go", "to": "c/b.go"}`), scope(`"a/"`, `"c/b.go"`)),
		`{"title": "two", "links": [{"item": 1, "kind": "depends-on"}, {"url": "https://e.com/x", "kind": "issue"}]}`)))
	f.Fuzz(func(t *testing.T, src []byte) {
		d, err := plan.Parse(src)
		if err != nil {
			var pe *plan.Error
			if !errors.As(err, &pe) || pe.Problem == "" {
				t.Fatalf("Parse: %#v, want a *plan.Error with a problem", err)
			}
			return
		}
		again, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		if len(again) > plan.MaxSource {
			// encoding/json escapes <, >, &, U+2028 and U+2029 (six bytes
			// for one to three): a document near the limit may grow past it.
			return
		}
		d2, err := plan.Parse(again)
		if err != nil {
			t.Fatalf("a parsed document's JSON does not parse: %v\n%s", err, again)
		}
		if diff := cmp.Diff(d, d2); diff != "" {
			t.Fatalf("re-parsed document differs (-first +second):\n%s", diff)
		}
		for i, it := range d.Items {
			spec, err := it.Spec()
			if err != nil {
				t.Fatalf("items[%d].Spec: %v", i, err)
			}
			back, err := plan.ParseSpec(spec)
			if err != nil {
				t.Fatalf("ParseSpec(items[%d].Spec()): %v\n%s", i, err, spec)
			}
			if diff := cmp.Diff(it, back); diff != "" {
				t.Fatalf("items[%d]: ParseSpec(Spec()) differs (-item +back):\n%s", i, diff)
			}
		}
	})
}
