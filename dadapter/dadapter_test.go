package dadapter

import "testing"

// TestParseUsage: the fields an agent's result may carry for tokens and
// cost are read only from a JSON object's "usage" object, and nonsense (a
// negative cost, a fractional token count) is refused rather than shown.
func TestParseUsage(t *testing.T) {
	cases := []struct {
		result string
		want   Usage
		ok     bool
	}{
		{`{"summary":"done","usage":{"inputTokens":1200,"outputTokens":340,"costUsd":0.0123}}`, Usage{1200, 340, 0.0123}, true},
		{`{"usage":{"costUsd":0.5}}`, Usage{CostUSD: 0.5}, true},
		{`{"usage":{}}`, Usage{}, true},
		{`{"summary":"done","other":{"usage":1}}`, Usage{}, false},
		{`{"usage":null}`, Usage{}, false},
		{`{"usage":{"inputTokens":-1}}`, Usage{}, false},
		{`{"usage":{"costUsd":-0.01}}`, Usage{}, false},
		{`{"usage":{"outputTokens":1.5}}`, Usage{}, false},
		{`{"usage":{"inputTokens":"12"}}`, Usage{}, false},
		{`{"usage":{"costUsd":1e999}}`, Usage{}, false},
		{`[{"usage":{"inputTokens":1}}]`, Usage{}, false},
		{`go test ./... failed: TestParse`, Usage{}, false},
		{``, Usage{}, false},
	}
	for _, c := range cases {
		got, ok := ParseUsage([]byte(c.result))
		if got != c.want || ok != c.ok {
			t.Errorf("ParseUsage(%s) = %+v, %v; want %+v, %v", c.result, got, ok, c.want, c.ok)
		}
	}
}
