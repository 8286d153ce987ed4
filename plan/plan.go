package plan

import (
	"bytes"
	"encoding/json"
	"path"
	"strings"
)

// Format is the value of a document's "format" field. A later, incompatible
// format gets a new name, so that an old build refuses what it cannot read
// instead of reading half of it.
const Format = "codeboost-plan/1"

// The document's limits (docs/plan-format.md, "Limits"). MaxSource is the
// contract's "1 MiB parser": the import request's body bound (6 MiB + 16 KiB)
// is sized so that every source Parse accepts fits in it, JSON-escaped.
const (
	MaxSource       = 1 << 20  // bytes of the whole document
	MaxItems        = 200      // items in a document (at least 1)
	MaxTitle        = 200      // characters (Unicode code points) of a title (at least 1)
	MaxInstructions = 64 << 10 // bytes of an item's instructions
	MaxFiles        = 500      // file operations of one item
	MaxLinks        = 100      // links of one item
	MaxScope        = 100      // scope paths of one item
	MaxPath         = 4096     // bytes of a path (a file operation's or a scope path)
	MaxURL          = 4096     // bytes of a link's URL
)

// File operations.
const (
	OpCreate = "create"
	OpModify = "modify"
	OpDelete = "delete"
	OpRename = "rename" // the only operation with a To
)

// Link kinds: an item link depends on another item of the same document; a
// URL link points at an issue or a document outside it.
const (
	KindDependsOn = "depends-on"
	KindIssue     = "issue"
	KindDoc       = "doc"
)

// Document is a parsed plan document. Every Document that Parse returns
// satisfies every rule of the format; its JSON (encoding/json) is a valid
// document that parses to an equal Document.
type Document struct {
	Format string `json:"format"` // always Format
	Title  string `json:"title"`
	Items  []Item `json:"items"` // item n of the plan is Items[n-1]
}

// Item is one plan item: the work of one execute attempt.
type Item struct {
	Title        string   `json:"title"`
	Instructions string   `json:"instructions,omitempty"` // for the agent; may be empty
	Files        []FileOp `json:"files,omitempty"`        // nil when it declares none
	Links        []Link   `json:"links,omitempty"`        // nil when it declares none
	Scope        []string `json:"scope,omitempty"`        // nil when it declares none; "dir/" or "exact/file"
}

// FileOp is a declared file operation: what the item says it will do to one
// path. It is a declaration the audit checks the agent's changes against,
// never a command codeboost carries out.
type FileOp struct {
	Op   string `json:"op"`           // OpCreate, OpModify, OpDelete or OpRename
	Path string `json:"path"`         // the file, relative to the repository root
	To   string `json:"to,omitempty"` // the new path; set exactly when Op is OpRename
}

// Link is a declared link: to another item of the document (Item, with
// KindDependsOn) or to a URL (URL, with KindIssue or KindDoc). Exactly one
// of Item and URL is set.
type Link struct {
	Item int    `json:"item,omitempty"` // 1-based item number; 0 for a URL link
	URL  string `json:"url,omitempty"`  // an http or https URL; "" for an item link
	Kind string `json:"kind"`
}

// Error is a document that breaks a rule of the format. At is the JSON
// location of the offending value (items[2].files[0].path: array indexes
// count from 0, while item numbers count from 1), or "" for the document as
// a whole.
type Error struct {
	At      string
	Problem string
}

func (e *Error) Error() string {
	if e.At == "" {
		return e.Problem
	}
	return e.At + ": " + e.Problem
}

// Titles returns the items' titles in item order: what the Store kept for
// each item before it kept the whole item.
func (d Document) Titles() []string {
	out := make([]string, len(d.Items))
	for i, it := range d.Items {
		out[i] = it.Title
	}
	return out
}

// InScope reports whether p, a clean slash-separated path relative to the
// repository root, lies inside some item's scope: a path outside every
// item's scope is out of the plan's scope.
func (d Document) InScope(p string) bool {
	for _, it := range d.Items {
		if it.InScope(p) {
			return true
		}
	}
	return false
}

// DeclaresScope reports whether the item declares any scope at all (a
// scope path or a file operation): an item that declares none leaves its
// scope undeclared, and the runner judges none of its changes out of it.
// A plan item without declarations is a plain instruction, and pausing
// every one of its runs for amendment would make the check a tax on plans
// that never asked for it.
func (it Item) DeclaresScope() bool { return len(it.Scope) > 0 || len(it.Files) > 0 }

// InScope reports whether p, a clean slash-separated path relative to the
// repository root, lies inside the item's scope: p equals one of its exact
// scope paths or one of its file operations' paths (a rename's both), or
// lies under one of its directory scope paths ("dir/" covers everything
// under dir, not dir itself as a file). A path that is not clean is never in
// scope: "dir/../x" is not under dir.
func (it Item) InScope(p string) bool {
	if path.Clean(p) != p {
		return false
	}
	for _, s := range it.Scope {
		if dir, ok := strings.CutSuffix(s, "/"); ok {
			if strings.HasPrefix(p, dir+"/") {
				return true
			}
		} else if p == s {
			return true
		}
	}
	for _, f := range it.Files {
		if p == f.Path || (f.To != "" && p == f.To) {
			return true
		}
	}
	return false
}

// Spec returns the item's canonical JSON, which the Store keeps with the
// item's row: the fields in a fixed order, empty optional fields left out,
// no insignificant space and no HTML escaping (instructions quote code).
// ParseSpec reads it back.
func (it Item) Spec() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(it); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// ParseSpec reads an item's Spec back, as strictly as Parse reads an item,
// except for the rules that need the whole document: an item link is
// checked to name an item number (1 or more), not an existing other item.
func ParseSpec(spec []byte) (Item, error) {
	if len(spec) > MaxSource {
		return Item{}, &Error{Problem: sizeProblem("the item", len(spec))}
	}
	r, err := newReader(spec)
	if err != nil {
		return Item{}, err
	}
	it, err := r.item("")
	if err != nil {
		return Item{}, err
	}
	return it, r.end()
}
