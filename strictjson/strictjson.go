// Package strictjson is the one way codeboost reads JSON that comes from
// outside the process: API bodies, the configuration file, agents' and
// GitHub's replies. encoding/json matches keys case-insensitively and lets
// a repeated key win over the first (issue 19: {"Task": …} was processed,
// and a configuration with "listen" then "LISTEN" served on the second
// address), so reading goes through github.com/go-json-experiment/json,
// the maintained upstream of encoding/json/v2 (which Go 1.26 has only under
// GOEXPERIMENT=jsonv2): keys match exactly, case included, a key may appear
// once in an object, invalid UTF-8 is an error, and the input is exactly
// one JSON value (whitespace around it aside). Writing JSON stays with
// encoding/json.
//
// Two semantics are kept from encoding/json, because the code relies on
// them: a JSON null leaves a value that cannot be null (a string, a
// number, a bool, a struct) as it was, so that a default survives it (the
// configuration's listen address); and a type's UnmarshalJSON method is
// called as before (the configuration's durations).
package strictjson

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Unmarshal reads data into v, refusing an unknown key too: for input
// whose every key codeboost defines (API bodies, the configuration, the
// planning agent's cards).
func Unmarshal(data []byte, v any) error {
	return describe(json.Unmarshal(data, v, json.RejectUnknownMembers(true), keepOnNull))
}

// UnmarshalOpen reads data into v like Unmarshal, but skips keys v has no
// field for: for replies from systems that add fields of their own
// (GitHub's REST API, an agent's result).
func UnmarshalOpen(data []byte, v any) error {
	return describe(json.Unmarshal(data, v, keepOnNull))
}

// keepOnNull is encoding/json's rule for null: a value that cannot be
// null is left as it was (a pointer, slice, map or interface still
// becomes nil).
var keepOnNull = json.WithUnmarshalers(json.UnmarshalFromFunc(func(dec *jsontext.Decoder, v any) error {
	if dec.PeekKind() != 'n' {
		return json.SkipFunc
	}
	switch reflect.TypeOf(v).Elem().Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return json.SkipFunc
	}
	_, err := dec.ReadToken()
	return err
}))

// describe words an error as "where: what", where is the path of the
// object or value in the configuration's own notation (runner.agent,
// tasks[0]) and what names the key, in plan/'s words.
func describe(err error) error {
	if err == nil {
		return nil
	}
	if se, ok := errors.AsType[*jsontext.SyntacticError](err); ok {
		if errors.Is(se.Err, jsontext.ErrDuplicateName) {
			return &Error{Path: path(se.JSONPointer.Parent()), Problem: fmt.Sprintf("duplicate key %q", se.JSONPointer.LastToken())}
		}
		return &Error{Path: path(se.JSONPointer), Problem: "invalid JSON: " + strings.TrimPrefix(se.Error(), "jsontext: ")}
	}
	if se, ok := errors.AsType[*json.SemanticError](err); ok {
		if errors.Is(se.Err, json.ErrUnknownName) {
			return &Error{Path: path(se.JSONPointer.Parent()),
				Problem: fmt.Sprintf("unknown field %q (keys match exactly, case included)", se.JSONPointer.LastToken())}
		}
		if se.GoType != nil && se.Err != nil && reflect.PointerTo(se.GoType).Implements(unmarshaler) {
			return &Error{Path: path(se.JSONPointer), Problem: se.Err.Error()} // the type's own words
		}
		problem := "a JSON " + kindName(se.JSONKind) + " does not fit here"
		if se.GoType != nil {
			problem = "a JSON " + kindName(se.JSONKind) + " where a " + goName(se.GoType) + " belongs"
		}
		if se.Err != nil {
			problem += ": " + se.Err.Error()
		}
		return &Error{Path: path(se.JSONPointer), Problem: problem}
	}
	return err
}

var unmarshaler = reflect.TypeFor[interface{ UnmarshalJSON([]byte) error }]()

// Error is a JSON input that was refused, with where and why.
type Error struct {
	Path    string // "" for the whole value
	Problem string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Problem
	}
	return e.Path + ": " + e.Problem
}

// path turns a JSON pointer (/tasks/0/name) into tasks[0].name.
func path(p jsontext.Pointer) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		if _, err := strconv.Atoi(tok); err == nil {
			fmt.Fprintf(&b, "[%s]", tok)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 'f', 't':
		return "boolean"
	case '"':
		return "string"
	case '0':
		return "number"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "value"
}

func goName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "whole number"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice, reflect.Array:
		return "list"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	return t.String()
}
