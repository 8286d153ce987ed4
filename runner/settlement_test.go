package runner

import (
	"strings"
	"testing"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// TestValidOutputAcceptsWhatPublicationStores: publication step 2's size
// check and the Store's bound on attempts.result are one limit, 1 MiB
// inclusive. A valid result of exactly that size is published, not failed
// as invalid output; one byte more is refused by both.
//
// kills: mutant/result-limit-below-store
func TestValidOutputAcceptsWhatPublicationStores(t *testing.T) {
	objectOf := func(n int) []byte { // a JSON object of n bytes in all
		return []byte(`{"summary":"` + strings.Repeat("a", n-len(`{"summary":""}`)) + `"}`)
	}
	cases := []struct {
		name string
		out  []byte
		want bool
	}{
		{"empty", nil, false},
		{"not JSON", []byte("not json"), false},
		{"small", []byte(`{"ok":true}`), true},
		{"exactly the Store's bound", objectOf(store.MaxResult), true},
		{"one byte over", objectOf(store.MaxResult + 1), false},
	}
	for _, c := range cases {
		if got := validOutput(words.KindExecute, c.out); got != c.want {
			t.Errorf("%s (%d bytes): validOutput = %v, want %v", c.name, len(c.out), got, c.want)
		}
	}
}

// TestValidOutputChecksTheKindsSchema: "Validate the output (schema, …)",
// per attempt kind, not only as JSON: a result is one object, and the
// fields a kind's result is read for have their types.
//
// kills: mutant/output-schema-only-json
func TestValidOutputChecksTheKindsSchema(t *testing.T) {
	cases := []struct {
		kind, out string
		want      bool
	}{
		{words.KindExecute, `{"summary":"done","usage":{"inputTokens":1}}`, true},
		{words.KindExecute, `{"summary":"done","extra":[1]}`, true},
		{words.KindExecute, `["done"]`, false},
		{words.KindExecute, `"done"`, false},
		{words.KindExecute, `null`, false},
		{words.KindExecute, `{"summary":3}`, false},
		{words.KindExecute, `{"usage":"lots"}`, false},
		{words.KindExecute, `{"findings":"none"}`, true}, // execute reports no findings: not read
		{words.KindReview, `{"findings":[]}`, true},
		{words.KindReview, `{"findings":"none"}`, false},
		{words.KindCheck, `{"findings":{"a":1}}`, false},
		{words.KindQuestion, `{"answer":"yes"}`, true},
		{words.KindQuestion, `{"answer":true}`, false},
		// A key given twice is refused (issue 19): the check and a later
		// reader could each see a different one.
		{words.KindQuestion, `{"answer":true,"answer":"yes"}`, false},
		{words.KindExecute, `{"summary":"done","usage":{"inputTokens":1,"inputTokens":-5}}`, false},
	}
	for _, c := range cases {
		if got := validOutput(c.kind, []byte(c.out)); got != c.want {
			t.Errorf("%s result %s: valid = %v, want %v", c.kind, c.out, got, c.want)
		}
	}
}
