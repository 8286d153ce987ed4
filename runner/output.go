package runner

import (
	"bytes"
	"encoding/json"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/strictjson"
	"github.com/codeboost/codeboost/words"
)

// This file is publication step 2's schema and size check ("Validate the
// output (schema, size, …)"): what an agent's result must be before it is
// published. A result that fails it is "a result that is not this
// attempt's": the attempt fails with the invalid-output diagnostic.

// outputSchema is what one attempt kind's result may carry: a JSON object
// whose known fields have their types. Fields it does not name are kept
// as they are (an agent may say more); a known field of the wrong type
// makes the result invalid, because the review screen and the ledger read
// those fields.
type outputSchema struct {
	strings []string // fields that must be JSON strings
	arrays  []string // fields that must be JSON arrays
}

// resultFields are every kind's fields (dadapter.Result): a one-line
// summary, and the usage the agent reports (checked by its own rules,
// dadapter.ParseUsage, where it is shown).
var resultFields = outputSchema{strings: []string{"summary"}}

// outputSchemas are the kinds' schemas: the kinds that review code report
// findings as an array, a question's answer is text. A kind not listed
// has resultFields only.
var outputSchemas = map[string]outputSchema{
	words.KindReview:   {strings: []string{"summary"}, arrays: []string{"findings"}},
	words.KindCheck:    {strings: []string{"summary"}, arrays: []string{"findings"}},
	words.KindQuestion: {strings: []string{"summary", "answer"}},
}

// validOutput reports whether out is a valid result of an attempt of
// kind: at most the Store's bound on attempts.result (1 MiB, inclusive),
// one JSON object, and its kind's known fields of their types, "usage"
// an object when present.
// ValidOutput is validOutput for the question coordinator (package ask),
// whose answers are results of the same schema.
func ValidOutput(kind string, out []byte) bool { return validOutput(kind, out) }

func validOutput(kind string, out []byte) bool {
	if len(out) == 0 || len(out) > store.MaxResult || !json.Valid(out) {
		return false
	}
	// strictjson's open reading: the agent's own keys are allowed, but a
	// key given twice (at any depth) is not, so what is checked here is
	// what every later reader of the result sees.
	var fields map[string]json.RawMessage
	if err := strictjson.UnmarshalOpen(out, &fields); err != nil || fields == nil {
		return false // not an object (an array, a string, a number, null)
	}
	schema, ok := outputSchemas[kind]
	if !ok {
		schema = resultFields
	}
	for _, f := range schema.strings {
		if v, ok := fields[f]; ok && !isJSON(v, '"') {
			return false
		}
	}
	for _, f := range schema.arrays {
		if v, ok := fields[f]; ok && !isJSON(v, '[') {
			return false
		}
	}
	if v, ok := fields["usage"]; ok && !isJSON(v, '{') {
		return false
	}
	return true
}

// isJSON reports whether the valid JSON value v starts with open: a
// string ("), an array ([) or an object ({).
func isJSON(v json.RawMessage, open byte) bool {
	v = bytes.TrimLeft(v, " \t\r\n")
	return len(v) > 0 && v[0] == open
}
