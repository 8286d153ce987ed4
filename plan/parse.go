package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Parse reads a plan document (docs/plan-format.md) and checks every rule of
// the format: its size, its shape (no unknown field, no repeated key, no
// value of the wrong type, no data after it), every limit, every path, every
// link. It returns a *Error naming the first problem's JSON location, or a
// Document that satisfies every rule.
func Parse(src []byte) (Document, error) {
	if len(src) > MaxSource {
		return Document{}, &Error{Problem: sizeProblem("the document", len(src))}
	}
	r, err := newReader(src)
	if err != nil {
		return Document{}, err
	}
	d, err := r.document()
	if err != nil {
		return Document{}, err
	}
	if err := r.end(); err != nil {
		return Document{}, err
	}
	if err := checkItemLinks(d.Items); err != nil {
		return Document{}, err
	}
	return d, nil
}

// checkItemLinks checks what needs the whole item list: an item link names
// another item of the document. Items are numbered from 1 in order.
func checkItemLinks(items []Item) error {
	for i, it := range items {
		for j, l := range it.Links {
			if l.URL != "" {
				continue
			}
			at := field(index(field(index("items", i), "links"), j), "item")
			switch {
			case l.Item == i+1:
				return errorf(at, "%d is the item itself (items[%d] is item %d)", l.Item, i, i+1)
			case l.Item > len(items):
				return errorf(at, "%d names no item: the plan has %d", l.Item, len(items))
			}
		}
	}
	return nil
}

func sizeProblem(what string, n int) string {
	return fmt.Sprintf("%s is %d bytes; at most %d (1 MiB)", what, n, MaxSource)
}

func errorf(at, format string, args ...any) *Error {
	return &Error{At: at, Problem: fmt.Sprintf(format, args...)}
}

// field and index build JSON locations: items[2].files[0].path.
func field(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

func index(at string, i int) string { return at + "[" + strconv.Itoa(i) + "]" }

// reader walks a document token by token instead of decoding it into
// structs: encoding/json's Unmarshal keeps the last of two equal keys,
// matches keys case-insensitively and names no location for an unknown
// field, and the format refuses the first two and wants the third.
type reader struct {
	dec *json.Decoder
}

func newReader(src []byte) (*reader, error) {
	if len(bytes.Trim(src, " \t\r\n")) == 0 { // JSON's white space
		return nil, &Error{Problem: "the document is empty"}
	}
	if !utf8.Valid(src) {
		bad := 0
		for bad < len(src) {
			r, n := utf8.DecodeRune(src[bad:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			bad += n
		}
		return nil, &Error{Problem: fmt.Sprintf("not UTF-8: an invalid byte at offset %d", bad)}
	}
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber() // item numbers must be whole numbers, never 2.0 or 2e0
	return &reader{dec: dec}, nil
}

// token reads the next token. A syntax error is reported at the location
// being read, without a byte offset: json.Decoder's offsets are not
// reliable for errors met between tokens.
func (r *reader) token(at string) (json.Token, error) {
	tok, err := r.dec.Token()
	if err == nil {
		return tok, nil
	}
	return nil, syntaxError(at, "", err)
}

func syntaxError(at, where string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errorf(at, "the JSON ends too early")
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return errorf(at, "invalid JSON%s: %s", where, se.Error())
	}
	return errorf(at, "invalid JSON%s: %v", where, err)
}

// end checks that nothing but white space follows the value read.
func (r *reader) end() error {
	tok, err := r.dec.Token()
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return syntaxError("", " after the document", err)
	}
	return errorf("", "%s follows the document: a document is one JSON object", describe(tok))
}

func describe(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			return "an object"
		case '[':
			return "an array"
		}
		return fmt.Sprintf("%q", v.String())
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}

// object reads one JSON object at at and calls member for each key, in the
// document's order, with the reader positioned at the key's value; member
// must read that value whole. A repeated key is an error.
func (r *reader) object(at string, member func(key string) error) error {
	tok, err := r.token(at)
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return errorf(at, "expected an object, found %s", describe(tok))
	}
	seen := map[string]bool{}
	for r.dec.More() {
		tok, err := r.token(at)
		if err != nil {
			return err
		}
		key := tok.(string) // the decoder returns an object's keys as strings
		if seen[key] {
			return errorf(at, "duplicate key %q", key)
		}
		seen[key] = true
		if err := member(key); err != nil {
			return err
		}
	}
	_, err = r.token(at) // '}'
	return err
}

// array reads one JSON array of at most max elements (what names them in
// the error), calling elem with each element's location.
func (r *reader) array(at string, max int, what string, elem func(at string) error) error {
	tok, err := r.token(at)
	if err != nil {
		return err
	}
	if tok != json.Delim('[') {
		return errorf(at, "expected an array, found %s", describe(tok))
	}
	for i := 0; r.dec.More(); i++ {
		if i == max {
			return errorf(at, "more than %d %s", max, what)
		}
		if err := elem(index(at, i)); err != nil {
			return err
		}
	}
	_, err = r.token(at) // ']'
	return err
}

func (r *reader) str(at string) (string, error) {
	tok, err := r.token(at)
	if err != nil {
		return "", err
	}
	s, ok := tok.(string)
	if !ok {
		return "", errorf(at, "expected a string, found %s", describe(tok))
	}
	return s, nil
}

func unknownField(at, key string) error {
	return errorf(at, "unknown field %q", key)
}

func missing(at, key string) error {
	return errorf(at, "missing %q", key)
}

func (r *reader) document() (Document, error) {
	var d Document
	var hasFormat, hasTitle, hasItems bool
	err := r.object("", func(key string) error {
		at := field("", key)
		var err error
		switch key {
		case "format":
			hasFormat = true
			if d.Format, err = r.str(at); err != nil {
				return err
			}
			if d.Format != Format {
				return errorf(at, "%q is not a format this build reads (it reads %q)", d.Format, Format)
			}
		case "title":
			hasTitle = true
			d.Title, err = r.title(at)
		case "items":
			hasItems = true
			err = r.array(at, MaxItems, "items", func(at string) error {
				it, err := r.item(at)
				if err != nil {
					return err
				}
				d.Items = append(d.Items, it)
				return nil
			})
			if err == nil && len(d.Items) == 0 {
				err = errorf(at, "a plan has at least one item")
			}
		default:
			err = unknownField("", key)
		}
		return err
	})
	switch {
	case err != nil:
		return Document{}, err
	case !hasFormat:
		return Document{}, missing("", "format")
	case !hasTitle:
		return Document{}, missing("", "title")
	case !hasItems:
		return Document{}, missing("", "items")
	}
	return d, nil
}

func (r *reader) item(at string) (Item, error) {
	var it Item
	var hasTitle bool
	opAt := map[string]string{} // a path of a file operation → that operation's location
	scopeAt := map[string]string{}
	linkAt := map[Link]string{}
	err := r.object(at, func(key string) error {
		f := field(at, key)
		var err error
		switch key {
		case "title":
			hasTitle = true
			it.Title, err = r.title(f)
		case "instructions":
			it.Instructions, err = r.instructions(f)
		case "files":
			err = r.array(f, MaxFiles, "file operations", func(at string) error {
				op, err := r.fileOp(at)
				if err != nil {
					return err
				}
				for _, p := range []string{op.Path, op.To} {
					if p == "" {
						continue
					}
					if prev, ok := opAt[p]; ok {
						return errorf(at, "%q already has an operation in this item (%s): one operation per path", p, prev)
					}
					opAt[p] = at
				}
				it.Files = append(it.Files, op)
				return nil
			})
		case "links":
			err = r.array(f, MaxLinks, "links", func(at string) error {
				l, err := r.link(at)
				if err != nil {
					return err
				}
				if prev, ok := linkAt[l]; ok {
					return errorf(at, "repeats %s", prev)
				}
				linkAt[l] = at
				it.Links = append(it.Links, l)
				return nil
			})
		case "scope":
			err = r.array(f, MaxScope, "scope paths", func(at string) error {
				p, err := r.str(at)
				if err != nil {
					return err
				}
				if err := checkPath(at, p, true); err != nil {
					return err
				}
				if prev, ok := scopeAt[p]; ok {
					return errorf(at, "repeats %s", prev)
				}
				scopeAt[p] = at
				it.Scope = append(it.Scope, p)
				return nil
			})
		default:
			err = unknownField(at, key)
		}
		return err
	})
	if err != nil {
		return Item{}, err
	}
	if !hasTitle {
		return Item{}, missing(at, "title")
	}
	return it, nil
}

func (r *reader) fileOp(at string) (FileOp, error) {
	var op FileOp
	var hasOp, hasPath, hasTo bool
	err := r.object(at, func(key string) error {
		f := field(at, key)
		var err error
		switch key {
		case "op":
			hasOp = true
			if op.Op, err = r.str(f); err != nil {
				return err
			}
			switch op.Op {
			case OpCreate, OpModify, OpDelete, OpRename:
			default:
				return errorf(f, "%q is not an operation: create, modify, delete or rename", op.Op)
			}
		case "path":
			hasPath = true
			if op.Path, err = r.str(f); err != nil {
				return err
			}
			err = checkPath(f, op.Path, false)
		case "to":
			hasTo = true
			if op.To, err = r.str(f); err != nil {
				return err
			}
			err = checkPath(f, op.To, false)
		default:
			err = unknownField(at, key)
		}
		return err
	})
	switch {
	case err != nil:
		return FileOp{}, err
	case !hasOp:
		return FileOp{}, missing(at, "op")
	case !hasPath:
		return FileOp{}, missing(at, "path")
	case op.Op == OpRename && !hasTo:
		return FileOp{}, errorf(at, `a rename needs "to", the new path`)
	case op.Op != OpRename && hasTo:
		return FileOp{}, errorf(field(at, "to"), `only a rename has "to" (this is a %s)`, op.Op)
	case op.To == op.Path:
		return FileOp{}, errorf(field(at, "to"), "renames %q to itself", op.Path)
	}
	return op, nil
}

func (r *reader) link(at string) (Link, error) {
	var l Link
	var hasItem, hasURL, hasKind bool
	err := r.object(at, func(key string) error {
		f := field(at, key)
		var err error
		switch key {
		case "item":
			hasItem = true
			tok, err := r.token(f)
			if err != nil {
				return err
			}
			n, ok := tok.(json.Number)
			if !ok {
				return errorf(f, "expected an item number, found %s", describe(tok))
			}
			i, err := strconv.Atoi(string(n))
			if err != nil || i < 1 {
				return errorf(f, "%s is not an item number: items are numbered 1, 2, 3, … in order", n)
			}
			l.Item = i
		case "url":
			hasURL = true
			if l.URL, err = r.str(f); err != nil {
				return err
			}
			err = checkURL(f, l.URL)
		case "kind":
			hasKind = true
			if l.Kind, err = r.str(f); err != nil {
				return err
			}
			switch l.Kind {
			case KindDependsOn, KindIssue, KindDoc:
			default:
				return errorf(f, "%q is not a link kind: depends-on, issue or doc", l.Kind)
			}
		default:
			err = unknownField(at, key)
		}
		return err
	})
	switch {
	case err != nil:
		return Link{}, err
	case hasItem && hasURL:
		return Link{}, errorf(at, `a link has "item" or "url", not both`)
	case !hasItem && !hasURL:
		return Link{}, errorf(at, `a link needs "item" (another item's number) or "url"`)
	case !hasKind:
		return Link{}, missing(at, "kind")
	case hasItem && l.Kind != KindDependsOn:
		return Link{}, errorf(field(at, "kind"), `an item link's kind is "depends-on", not %q`, l.Kind)
	case hasURL && l.Kind == KindDependsOn:
		return Link{}, errorf(field(at, "kind"), `a URL link's kind is "issue" or "doc", not %q`, l.Kind)
	}
	return l, nil
}

// title reads a document's or an item's title: one line a person reads in a
// list, so no control character (no line break, no tab) and not blank.
func (r *reader) title(at string) (string, error) {
	s, err := r.str(at)
	if err != nil {
		return "", err
	}
	n := utf8.RuneCountInString(s)
	switch {
	case n == 0:
		return "", errorf(at, "is empty")
	case n > MaxTitle:
		return "", errorf(at, "is %d characters; at most %d", n, MaxTitle)
	case strings.TrimSpace(s) == "":
		return "", errorf(at, "is blank")
	}
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		c, _ := utf8.DecodeRuneInString(s[i:])
		return "", errorf(at, "contains a control character (%U); a title is one line", c)
	}
	return s, nil
}

// instructions reads an item's instructions: free text for the agent, over
// several lines, so tab, line feed and carriage return are the only control
// characters it may hold.
func (r *reader) instructions(at string) (string, error) {
	s, err := r.str(at)
	if err != nil {
		return "", err
	}
	if len(s) > MaxInstructions {
		return "", errorf(at, "is %d bytes; at most %d (64 KiB)", len(s), MaxInstructions)
	}
	if i := strings.IndexFunc(s, func(c rune) bool { return unicode.IsControl(c) && c != '\t' && c != '\n' && c != '\r' }); i >= 0 {
		c, _ := utf8.DecodeRuneInString(s[i:])
		return "", errorf(at, "contains the control character %U (only tab, line feed and carriage return are allowed)", c)
	}
	return s, nil
}

// checkPath checks a path in the repository: relative, slash-separated,
// clean, inside the repository and outside Git's metadata. A scope path may
// end in "/", which makes it a directory's.
func checkPath(at, p string, scope bool) error {
	switch {
	case p == "":
		return errorf(at, "is empty")
	case len(p) > MaxPath:
		return errorf(at, "is %d bytes; at most %d", len(p), MaxPath)
	case strings.IndexFunc(p, unicode.IsControl) >= 0:
		return errorf(at, "%q contains a control character", p)
	case strings.Contains(p, `\`):
		return errorf(at, "%q contains a backslash: paths are slash-separated", p)
	case strings.HasPrefix(p, "/"):
		return errorf(at, "%q is absolute: paths are relative to the repository root", p)
	}
	name, dir := p, ""
	if scope {
		if n, ok := strings.CutSuffix(p, "/"); ok {
			name, dir = n, "/"
		}
	}
	clean := path.Clean(name)
	switch {
	case clean == ".." || strings.HasPrefix(clean, "../"):
		return errorf(at, "%q leaves the repository", p)
	case clean == ".":
		return errorf(at, "%q names the whole repository, not a path in it", p)
	case clean != name:
		return errorf(at, "%q is not clean: write %q", p, clean+dir)
	}
	for _, part := range strings.Split(name, "/") {
		if strings.EqualFold(part, ".git") {
			return errorf(at, "%q is inside Git's metadata (.git), which no item may change", p)
		}
	}
	return nil
}

func checkURL(at, s string) error {
	if len(s) > MaxURL {
		return errorf(at, "is %d bytes; at most %d", len(s), MaxURL)
	}
	if strings.IndexFunc(s, func(c rune) bool { return unicode.IsSpace(c) || unicode.IsControl(c) }) >= 0 {
		return errorf(at, "%q contains white space or a control character", s)
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return errorf(at, "%q is not a URL", s)
	case u.Scheme != "http" && u.Scheme != "https":
		return errorf(at, "%q is not an http or https URL", s)
	case u.Host == "":
		return errorf(at, "%q has no host", s)
	}
	return nil
}
