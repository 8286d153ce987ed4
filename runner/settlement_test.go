package runner

import (
	"bytes"
	"testing"

	"github.com/codeboost/codeboost/store"
)

// TestValidOutputAcceptsWhatPublicationStores: publication step 2's size
// check and the Store's bound on attempts.result are one limit, 1 MiB
// inclusive. A valid result of exactly that size is published, not failed
// as invalid output; one byte more is refused by both.
//
// kills: mutant/result-limit-below-store
func TestValidOutputAcceptsWhatPublicationStores(t *testing.T) {
	jsonOf := func(n int) []byte { // a JSON string of n bytes in all
		return append(append([]byte{'"'}, bytes.Repeat([]byte{'a'}, n-2)...), '"')
	}
	cases := []struct {
		name string
		out  []byte
		want bool
	}{
		{"empty", nil, false},
		{"not JSON", []byte("not json"), false},
		{"small", []byte(`{"ok":true}`), true},
		{"exactly the Store's bound", jsonOf(store.MaxResult), true},
		{"one byte over", jsonOf(store.MaxResult + 1), false},
	}
	for _, c := range cases {
		if got := validOutput(c.out); got != c.want {
			t.Errorf("%s (%d bytes): validOutput = %v, want %v", c.name, len(c.out), got, c.want)
		}
	}
}
