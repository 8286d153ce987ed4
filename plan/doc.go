// Package plan owns the plan document format, codeboost-plan/1, defined in
// docs/plan-format.md: a plan's items with their instruction text, file
// operations, links and scope paths. Parse is the format's one strict
// reader (the contract's "1 MiB parser" of POST /api/plan/import): every
// limit and rule of the document lives here, and every error names its JSON
// location, so that a person can fix the document from the message alone.
//
// The Store keeps each item as its canonical JSON (Item.Spec) and reads it
// back with ParseSpec; the audit and scope rules of later issues read the
// items' scope paths and file operations through InScope.
//
// It is a leaf: it imports only the standard library, so that the Store,
// the web server and the runner can all depend on it.
package plan
