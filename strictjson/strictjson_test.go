package strictjson

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"30m\"")
	}
	v, err := time.ParseDuration(s)
	*d = duration(v)
	return err
}

type doc struct {
	Name    string          `json:"name"`
	Version int64           `json:"version"`
	Item    *int            `json:"item,omitempty"`
	Wait    duration        `json:"wait"`
	Raw     json.RawMessage `json:"raw"`
	List    []string        `json:"list"`
	Sub     struct {
		A int `json:"a"`
	} `json:"sub"`
}

// TestUnmarshalRefuses: exact-case keys, no repeated key (at any depth,
// also inside a raw value), no unknown key, one value; each error names
// the key and where it is.
// kills: mutant/json-keys-case-insensitive mutant/json-duplicate-keys-allowed
func TestUnmarshalRefuses(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`{"Name":"a"}`, `unknown field "Name" (keys match exactly, case included)`},
		{`{"name":"a","name":"b"}`, `duplicate key "name"`},
		{`{"name":"a","NAME":"b"}`, `unknown field "NAME"`},
		{`{"sub":{"a":1,"a":2}}`, `sub: duplicate key "a"`},
		{`{"raw":{"x":1,"x":2}}`, `raw: duplicate key "x"`},
		{`{"sub":{"b":1}}`, `sub: unknown field "b"`},
		{`{"list":["a",1]}`, `list[1]: a JSON number where a string belongs`},
		{`{"version":1.5}`, `version: a JSON number where a whole number belongs`},
		{`{"version":"1"}`, `version: a JSON string where a whole number belongs`},
		{`{"wait":5}`, `wait: a duration is a string such as "30m"`},
		{`{"name":"a"} {}`, `invalid JSON: invalid character '{' after top-level value`},
		{`{"name":"a"}x`, `invalid JSON`},
		{"{\"name\":\"\xff\"}", `invalid UTF-8`},
		{``, `invalid JSON`},
		{`[]`, `a JSON array where a object belongs`},
	} {
		var d doc
		err := Unmarshal([]byte(tc.src), &d)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.src, err, tc.want)
		}
	}
}

// TestUnmarshalKeepsWhatTheCodeReliesOn: encoding/json's semantics the
// callers rely on hold: large whole numbers into int64, null leaves a
// default alone and clears a pointer, UnmarshalJSON methods are called, a
// raw value is kept as sent (null too).
func TestUnmarshalKeepsWhatTheCodeReliesOn(t *testing.T) {
	one := 1
	d := doc{Name: "default", Item: &one, List: []string{"x"}}
	src := `{"name":null,"version":9007199254740993,"item":null,"wait":"30m","raw":null,"list":null,"sub":{"a":2}} `
	if err := Unmarshal([]byte(src), &d); err != nil {
		t.Fatal(err)
	}
	if d.Name != "default" || d.Version != 9007199254740993 || d.Item != nil || time.Duration(d.Wait) != 30*time.Minute ||
		string(d.Raw) != "null" || d.List != nil || d.Sub.A != 2 {
		t.Errorf("%+v", d)
	}
}

// TestUnmarshalOpen skips unknown keys (a reply with fields of its own) but
// still matches case exactly and refuses a repeated key.
func TestUnmarshalOpen(t *testing.T) {
	var d doc
	if err := UnmarshalOpen([]byte(`{"name":"a","extra":{"deep":[1]},"Version":7}`), &d); err != nil || d.Name != "a" || d.Version != 0 {
		t.Errorf("%v %+v", err, d)
	}
	if err := UnmarshalOpen([]byte(`{"name":"a","name":"b"}`), &d); err == nil || !strings.Contains(err.Error(), `duplicate key "name"`) {
		t.Errorf("a repeated key: %v", err)
	}
	if err := UnmarshalOpen([]byte(`{"extra":{"x":1,"x":2}}`), &d); err == nil {
		t.Errorf("a repeated key inside an unknown value was accepted")
	}
}
