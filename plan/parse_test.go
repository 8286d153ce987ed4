package plan_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/plan"
	"github.com/google/go-cmp/cmp"
)

// doc is a valid document around items (the JSON of the items array's
// elements).
func doc(items ...string) string {
	return `{"format": "codeboost-plan/1", "title": "A plan", "items": [` + strings.Join(items, ", ") + `]}`
}

// item is an item titled "Item" with the given extra members.
func item(members ...string) string {
	return `{"title": "Item"` + strings.Join(append([]string{""}, members...), ", ") + `}`
}

func repeat(format string, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(format, i)
	}
	return strings.Join(parts, ", ")
}

func files(ops ...string) string { return `"files": [` + strings.Join(ops, ", ") + `]` }
func scope(paths ...string) string {
	return `"scope": [` + strings.Join(paths, ", ") + `]`
}
func links(ls ...string) string { return `"links": [` + strings.Join(ls, ", ") + `]` }

// quoted is s as a JSON string.
func quoted(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestParseAccepts(t *testing.T) {
	long := strings.Repeat("é", plan.MaxTitle) // 200 characters, 400 bytes
	deep := strings.Repeat("a/", plan.MaxPath/2-1) + "bc"
	if len(deep) != plan.MaxPath {
		t.Fatalf("fixture: %d bytes", len(deep))
	}
	for _, c := range []struct {
		name string
		src  string
		want plan.Document
	}{
		{"one item, title only", doc(item()),
			plan.Document{Format: plan.Format, Title: "A plan", Items: []plan.Item{{Title: "Item"}}}},
		{"members in any order, empty arrays", `{"items": [{"scope": [], "files": [], "links": [], "title": "Item", "instructions": ""}], "title": "A plan", "format": "codeboost-plan/1"}`,
			plan.Document{Format: plan.Format, Title: "A plan", Items: []plan.Item{{Title: "Item"}}}},
		{"escapes, tab and line breaks in instructions", doc(`{"title": "a \u003c b", "instructions": "line 1\n\tline 2\r\n"}`),
			plan.Document{Format: plan.Format, Title: "A plan", Items: []plan.Item{{Title: "a < b", Instructions: "line 1\n\tline 2\r\n"}}}},
		{"a title of 200 characters", doc(`{"title": "` + long + `"}`),
			plan.Document{Format: plan.Format, Title: "A plan", Items: []plan.Item{{Title: long}}}},
		{"every file operation", doc(item(files(`{"op": "create", "path": "a/new.go"}`, `{"op": "modify", "path": "a/b.go"}`,
			`{"op": "delete", "path": "old.go"}`, `{"path": "x.go", "op": "rename", "to": "y/x.go"}`))),
			plan.Document{Format: plan.Format, Title: "A plan", Items: []plan.Item{{Title: "Item", Files: []plan.FileOp{
				{Op: "create", Path: "a/new.go"}, {Op: "modify", Path: "a/b.go"}, {Op: "delete", Path: "old.go"}, {Op: "rename", Path: "x.go", To: "y/x.go"}}}}}},
		{"scope paths: directories, files, dot names", doc(item(scope(`"dir/"`, `"exact/file.go"`, `".github/workflows/"`, `".gitignore"`, `"a/...b"`))),
			plan.Document{Format: plan.Format, Title: "A plan", Items: []plan.Item{{Title: "Item",
				Scope: []string{"dir/", "exact/file.go", ".github/workflows/", ".gitignore", "a/...b"}}}}},
		{"a path of 4096 bytes", doc(item(files(`{"op": "modify", "path": "` + deep + `"}`))),
			plan.Document{Format: plan.Format, Title: "A plan", Items: []plan.Item{{Title: "Item", Files: []plan.FileOp{{Op: "modify", Path: deep}}}}}},
		{"links to earlier and later items and URLs", doc(item(links(`{"item": 2, "kind": "depends-on"}`)), `{"title": "Two"}`,
			`{"title": "Three", "links": [{"kind": "depends-on", "item": 1}, {"url": "https://github.com/o/r/issues/8", "kind": "issue"}, {"url": "http://example.com/d#x", "kind": "doc"}]}`),
			plan.Document{Format: plan.Format, Title: "A plan", Items: []plan.Item{
				{Title: "Item", Links: []plan.Link{{Item: 2, Kind: "depends-on"}}},
				{Title: "Two"},
				{Title: "Three", Links: []plan.Link{{Item: 1, Kind: "depends-on"}, {URL: "https://github.com/o/r/issues/8", Kind: "issue"},
					{URL: "http://example.com/d#x", Kind: "doc"}}},
			}}},
		{"white space around the document", " \n\t" + doc(item()) + "\r\n ",
			plan.Document{Format: plan.Format, Title: "A plan", Items: []plan.Item{{Title: "Item"}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := plan.Parse([]byte(c.src))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Fatalf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseLimitsAreInclusive: every limit is reached by a document that
// parses, and passed by one more, which is refused with the limit named.
func TestParseLimitsAreInclusive(t *testing.T) {
	for _, c := range []struct {
		name     string
		at, over string
		want     string
	}{
		{"items", doc(repeat(`{"title": "item %d"}`, plan.MaxItems)), doc(repeat(`{"title": "item %d"}`, plan.MaxItems+1)),
			"items: more than 200 items"},
		{"files", doc(item(files(repeat(`{"op": "create", "path": "f%d"}`, plan.MaxFiles)))),
			doc(item(files(repeat(`{"op": "create", "path": "f%d"}`, plan.MaxFiles+1)))),
			"items[0].files: more than 500 file operations"},
		{"scope", doc(item(scope(repeat(`"d%d/"`, plan.MaxScope)))), doc(item(scope(repeat(`"d%d/"`, plan.MaxScope+1)))),
			"items[0].scope: more than 100 scope paths"},
		{"links", doc(item(links(repeat(`{"url": "https://example.com/%d", "kind": "doc"}`, plan.MaxLinks)))),
			doc(item(links(repeat(`{"url": "https://example.com/%d", "kind": "doc"}`, plan.MaxLinks+1)))),
			"items[0].links: more than 100 links"},
		{"instructions", doc(item(`"instructions": "` + strings.Repeat("x", plan.MaxInstructions) + `"`)),
			doc(item(`"instructions": "` + strings.Repeat("x", plan.MaxInstructions+1) + `"`)),
			"items[0].instructions: is 65537 bytes; at most 65536 (64 KiB)"},
		{"title", doc(`{"title": "` + strings.Repeat("é", plan.MaxTitle) + `"}`), doc(`{"title": "` + strings.Repeat("é", plan.MaxTitle+1) + `"}`),
			"items[0].title: is 201 characters; at most 200"},
		{"path", doc(item(files(`{"op": "create", "path": "` + strings.Repeat("p", plan.MaxPath) + `"}`))),
			doc(item(files(`{"op": "create", "path": "` + strings.Repeat("p", plan.MaxPath+1) + `"}`))),
			"items[0].files[0].path: is 4097 bytes; at most 4096"},
		{"url", doc(item(links(`{"url": "https://e.com/` + strings.Repeat("u", plan.MaxURL-len("https://e.com/")) + `", "kind": "doc"}`))),
			doc(item(links(`{"url": "https://e.com/` + strings.Repeat("u", plan.MaxURL+1-len("https://e.com/")) + `", "kind": "doc"}`))),
			"items[0].links[0].url: is 4097 bytes; at most 4096"},
		{"source", padTo(doc(item()), plan.MaxSource), padTo(doc(item()), plan.MaxSource+1),
			"the document is 1048577 bytes; at most 1048576 (1 MiB)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := plan.Parse([]byte(c.at)); err != nil {
				t.Errorf("at the limit: %v", err)
			}
			_, err := plan.Parse([]byte(c.over))
			if err == nil || err.Error() != c.want {
				t.Errorf("over the limit: %v, want %q", err, c.want)
			}
		})
	}
}

// padTo pads a document with trailing white space to n bytes.
func padTo(src string, n int) string { return src + strings.Repeat(" ", n-len(src)) }

func TestParseRefuses(t *testing.T) {
	rename := func(members string) string { return doc(item(files(`{"op": "rename", ` + members + `}`))) }
	path := func(p string) string { return doc(item(files(`{"op": "modify", "path": ` + quoted(p) + `}`))) }
	scopePath := func(p string) string { return doc(item(scope(quoted(p)))) }
	link := func(l string) string { return doc(item(links(l)), `{"title": "Two"}`) }
	for _, c := range []struct {
		name, src, want string
	}{
		// The document as a whole.
		{"not UTF-8", doc(`{"title": "caf` + "\xe9" + `"}`), "not UTF-8: an invalid byte at offset 74"},
		{"empty", "", "the document is empty"},
		{"white space only", " \n\t\r", "the document is empty"},
		{"no-break space only", "\u00a0", "invalid JSON: invalid character 'Â' looking for beginning of value"},
		{"an array", `[]`, "expected an object, found an array"},
		{"a string", `"plan"`, "expected an object, found a string"},
		{"syntax error", `{"format": "codeboost-plan/1",, }`, "invalid JSON: invalid character ',' looking for beginning of object key string"},
		{"cut short", `{"format": "codeboost-plan/1", "items": [`, "items: the JSON ends too early"},
		{"a second document", doc(item()) + ` {}`, "an object follows the document: a document is one JSON object"},
		{"garbage after", doc(item()) + ` x`, "invalid JSON after the document: invalid character 'x' looking for beginning of value"},
		{"unknown field", `{"format": "codeboost-plan/1", "title": "t", "items": [{"title": "i"}], "author": "me"}`, `unknown field "author"`},
		{"keys are case-sensitive", `{"Format": "codeboost-plan/1"}`, `unknown field "Format"`},
		{"duplicate key", `{"format": "codeboost-plan/1", "title": "t", "title": "u"}`, `duplicate key "title"`},
		{"duplicate key, escaped", `{"format": "codeboost-plan/1", "title": "t", "titl\u0065": "u"}`, `duplicate key "title"`},
		{"no format", `{"title": "t", "items": [{"title": "i"}]}`, `missing "format"`},
		{"another format", `{"format": "codeboost-plan/2"}`, `format: "codeboost-plan/2" is not a format this build reads (it reads "codeboost-plan/1")`},
		{"format not a string", `{"format": 1}`, "format: expected a string, found a number"},
		{"no title", `{"format": "codeboost-plan/1", "items": [{"title": "i"}]}`, `missing "title"`},
		{"empty title", `{"format": "codeboost-plan/1", "title": ""}`, "title: is empty"},
		{"blank title", `{"format": "codeboost-plan/1", "title": " \u00a0 "}`, "title: is blank"},
		{"title with a line break", `{"format": "codeboost-plan/1", "title": "a\nb"}`, "title: contains a control character (U+000A); a title is one line"},
		{"title null", `{"format": "codeboost-plan/1", "title": null}`, "title: expected a string, found null"},
		{"no items", `{"format": "codeboost-plan/1", "title": "t"}`, `missing "items"`},
		{"no item", doc(), "items: a plan has at least one item"},
		{"items not an array", `{"items": {}}`, "items: expected an array, found an object"},

		// Items.
		{"item not an object", doc(`"do it"`), "items[0]: expected an object, found a string"},
		{"item without title", doc(item(), `{"instructions": "x"}`), `items[1]: missing "title"`},
		{"item title with a tab", doc(`{"title": "a\tb"}`), "items[0].title: contains a control character (U+0009); a title is one line"},
		{"item title with DEL", doc(`{"title": "a\u007fb"}`), "items[0].title: contains a control character (U+007F); a title is one line"},
		{"item unknown field", doc(item(`"owner": "me"`)), `items[0]: unknown field "owner"`},
		{"item duplicate key", doc(item(`"instructions": "a", "instructions": "b"`)), `items[0]: duplicate key "instructions"`},
		{"instructions with NUL", doc(item(`"instructions": "a\u0000b"`)), "items[0].instructions: contains the control character U+0000 (only tab, line feed and carriage return are allowed)"},
		{"instructions not a string", doc(item(`"instructions": ["a"]`)), "items[0].instructions: expected a string, found an array"},

		// File operations.
		{"files not an array", doc(item(`"files": "a.go"`)), "items[0].files: expected an array, found a string"},
		{"op missing", doc(item(files(`{"path": "a.go"}`))), `items[0].files[0]: missing "op"`},
		{"op unknown", doc(item(files(`{"op": "chmod", "path": "a.go"}`))), `items[0].files[0].op: "chmod" is not an operation: create, modify, delete or rename`},
		{"op case", doc(item(files(`{"op": "Create", "path": "a.go"}`))), `items[0].files[0].op: "Create" is not an operation: create, modify, delete or rename`},
		{"path missing", doc(item(files(`{"op": "create"}`))), `items[0].files[0]: missing "path"`},
		{"file op unknown field", doc(item(files(`{"op": "create", "path": "a.go", "mode": "0755"}`))), `items[0].files[0]: unknown field "mode"`},
		{"rename without to", rename(`"path": "a.go"`), `items[0].files[0]: a rename needs "to", the new path`},
		{"to on a modify", doc(item(files(`{"op": "modify", "path": "a.go", "to": "b.go"}`))), `items[0].files[0].to: only a rename has "to" (this is a modify)`},
		{"empty to on a delete", doc(item(files(`{"op": "delete", "path": "a.go", "to": ""}`))), `items[0].files[0].to: is empty`},
		{"rename to itself", rename(`"path": "a.go", "to": "a.go"`), `items[0].files[0].to: renames "a.go" to itself`},
		{"rename to a bad path", rename(`"path": "a.go", "to": "../a.go"`), `items[0].files[0].to: "../a.go" leaves the repository`},
		{"two operations on one path", doc(item(files(`{"op": "create", "path": "a.go"}`, `{"op": "delete", "path": "a.go"}`))),
			`items[0].files[1]: "a.go" already has an operation in this item (items[0].files[0]): one operation per path`},
		{"an operation on a rename's target", doc(item(files(`{"op": "rename", "path": "a.go", "to": "b.go"}`, `{"op": "modify", "path": "b.go"}`))),
			`items[0].files[1]: "b.go" already has an operation in this item (items[0].files[0]): one operation per path`},

		// Paths (the same rules for a file operation's path and to, and
		// for scope paths, which may also end in "/").
		{"path empty", path(""), "items[0].files[0].path: is empty"},
		{"path absolute", path("/etc/passwd"), `items[0].files[0].path: "/etc/passwd" is absolute: paths are relative to the repository root`},
		{"path leaves", path("../x"), `items[0].files[0].path: "../x" leaves the repository`},
		{"path leaves from inside", path("a/../../x"), `items[0].files[0].path: "a/../../x" leaves the repository`},
		{"path is ..", path(".."), `items[0].files[0].path: ".." leaves the repository`},
		{"path not clean, ..", path("a/../b"), `items[0].files[0].path: "a/../b" is not clean: write "b"`},
		{"path not clean, //", path("a//b"), `items[0].files[0].path: "a//b" is not clean: write "a/b"`},
		{"path not clean, ./", path("./a"), `items[0].files[0].path: "./a" is not clean: write "a"`},
		{"file path with a trailing slash", path("a/"), `items[0].files[0].path: "a/" is not clean: write "a"`},
		{"path is the root", path("."), `items[0].files[0].path: "." names the whole repository, not a path in it`},
		{"path with a backslash", path(`a\b`), `items[0].files[0].path: "a\\b" contains a backslash: paths are slash-separated`},
		{"path with NUL", path("a\x00b"), `items[0].files[0].path: "a\x00b" contains a control character`},
		{"path with a line break", path("a\nb"), `items[0].files[0].path: "a\nb" contains a control character`},
		{"path in .git", path(".git/config"), `items[0].files[0].path: ".git/config" is inside Git's metadata (.git), which no item may change`},
		{"path in a nested .GIT", path("sub/.GIT/HEAD"), `items[0].files[0].path: "sub/.GIT/HEAD" is inside Git's metadata (.git), which no item may change`},
		{"scope not an array", doc(item(`"scope": "dir/"`)), "items[0].scope: expected an array, found a string"},
		{"scope not a string", doc(item(scope(`3`))), "items[0].scope[0]: expected a string, found a number"},
		{"scope root", scopePath("/"), `items[0].scope[0]: "/" is absolute: paths are relative to the repository root`},
		{"scope dot", scopePath("./"), `items[0].scope[0]: "./" names the whole repository, not a path in it`},
		{"scope two slashes", scopePath("dir//"), `items[0].scope[0]: "dir//" is not clean: write "dir/"`},
		{"scope leaves", scopePath("../"), `items[0].scope[0]: "../" leaves the repository`},
		{"scope .git directory", scopePath(".git/"), `items[0].scope[0]: ".git/" is inside Git's metadata (.git), which no item may change`},
		{"scope repeated", doc(item(scope(`"a/"`, `"b"`, `"a/"`))), `items[0].scope[2]: repeats items[0].scope[0]`},

		// Links.
		{"links not an array", doc(item(`"links": {}`)), "items[0].links: expected an array, found an object"},
		{"link item 0", link(`{"item": 0, "kind": "depends-on"}`), "items[0].links[0].item: 0 is not an item number: items are numbered 1, 2, 3, … in order"},
		{"link item negative", link(`{"item": -2, "kind": "depends-on"}`), "items[0].links[0].item: -2 is not an item number: items are numbered 1, 2, 3, … in order"},
		{"link item fraction", link(`{"item": 2.0, "kind": "depends-on"}`), "items[0].links[0].item: 2.0 is not an item number: items are numbered 1, 2, 3, … in order"},
		{"link item exponent", link(`{"item": 2e0, "kind": "depends-on"}`), "items[0].links[0].item: 2e0 is not an item number: items are numbered 1, 2, 3, … in order"},
		{"link item huge", link(`{"item": 99999999999999999999, "kind": "depends-on"}`), "items[0].links[0].item: 99999999999999999999 is not an item number: items are numbered 1, 2, 3, … in order"},
		{"link item a string", link(`{"item": "2", "kind": "depends-on"}`), "items[0].links[0].item: expected an item number, found a string"},
		{"link to itself", link(`{"item": 1, "kind": "depends-on"}`), "items[0].links[0].item: 1 is the item itself (items[0] is item 1)"},
		{"link to no item", link(`{"item": 3, "kind": "depends-on"}`), "items[0].links[0].item: 3 names no item: the plan has 2"},
		{"link to itself, later item", doc(item(), item(), item(links(`{"item": 3, "kind": "depends-on"}`))), "items[2].links[0].item: 3 is the item itself (items[2] is item 3)"},
		{"link item and url", link(`{"item": 2, "url": "https://e.com", "kind": "doc"}`), `items[0].links[0]: a link has "item" or "url", not both`},
		{"link with neither", link(`{"kind": "doc"}`), `items[0].links[0]: a link needs "item" (another item's number) or "url"`},
		{"link without kind", link(`{"item": 2}`), `items[0].links[0]: missing "kind"`},
		{"link kind unknown", link(`{"item": 2, "kind": "blocks"}`), `items[0].links[0].kind: "blocks" is not a link kind: depends-on, issue or doc`},
		{"item link of kind doc", link(`{"item": 2, "kind": "doc"}`), `items[0].links[0].kind: an item link's kind is "depends-on", not "doc"`},
		{"url link of kind depends-on", link(`{"url": "https://e.com", "kind": "depends-on"}`), `items[0].links[0].kind: a URL link's kind is "issue" or "doc", not "depends-on"`},
		{"link unknown field", link(`{"item": 2, "kind": "depends-on", "note": "x"}`), `items[0].links[0]: unknown field "note"`},
		{"link repeated", link(`{"item": 2, "kind": "depends-on"}, {"kind": "depends-on", "item": 2}`), `items[0].links[1]: repeats items[0].links[0]`},
		{"url ftp", link(`{"url": "ftp://e.com/x", "kind": "doc"}`), `items[0].links[0].url: "ftp://e.com/x" is not an http or https URL`},
		{"url relative", link(`{"url": "/docs/x", "kind": "doc"}`), `items[0].links[0].url: "/docs/x" is not an http or https URL`},
		{"url javascript", link(`{"url": "javascript:alert(1)", "kind": "doc"}`), `items[0].links[0].url: "javascript:alert(1)" is not an http or https URL`},
		{"url without host", link(`{"url": "https:///x", "kind": "doc"}`), `items[0].links[0].url: "https:///x" has no host`},
		{"url opaque", link(`{"url": "http:x", "kind": "doc"}`), `items[0].links[0].url: "http:x" has no host`},
		{"url with a space", link(`{"url": "https://e.com/a b", "kind": "doc"}`), `items[0].links[0].url: "https://e.com/a b" contains white space or a control character`},
		{"url unparsable", link(`{"url": "http://[::1", "kind": "doc"}`), `items[0].links[0].url: "http://[::1" is not a URL`},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := plan.Parse([]byte(c.src))
			if err == nil {
				t.Fatalf("Parse accepted it: %+v", d)
			}
			var pe *plan.Error
			if !errors.As(err, &pe) {
				t.Fatalf("Parse: %T %v, want a *plan.Error", err, err)
			}
			if err.Error() != c.want {
				t.Fatalf("Parse:\n got %s\nwant %s", err, c.want)
			}
			if !reflect.DeepEqual(d, plan.Document{}) {
				t.Fatalf("a refused document came back non-empty: %+v", d)
			}
		})
	}
}

// TestErrorLocation: the location is kept apart from the problem, so a
// caller can show or map it (the import's 400 answer).
func TestErrorLocation(t *testing.T) {
	_, err := plan.Parse([]byte(doc(item(), item(), item(files(`{"op": "create", "path": "../x"}`)))))
	var pe *plan.Error
	if !errors.As(err, &pe) || pe.At != "items[2].files[0].path" || pe.Problem != `"../x" leaves the repository` {
		t.Fatalf("Parse: %#v", err)
	}
	if got := (&plan.Error{Problem: "whole"}).Error(); got != "whole" {
		t.Fatalf("Error with no location: %q", got)
	}
}

func TestTitles(t *testing.T) {
	d, err := plan.Parse([]byte(doc(`{"title": "one"}`, `{"title": "two"}`, `{"title": "three"}`)))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Titles(); !reflect.DeepEqual(got, []string{"one", "two", "three"}) {
		t.Fatalf("Titles() = %q", got)
	}
}

// TestSpecIsCanonical: the stored form of an item does not depend on how
// its document was written (member order, white space, escapes, empty
// arrays), and ParseSpec reads it back.
func TestSpecIsCanonical(t *testing.T) {
	a, err := plan.Parse([]byte(doc(`{"title": "Add <b>", "instructions": "use a < b\n", "scope": ["x/"],
		"files": [{"path": "x/a.go", "op": "create"}, {"op": "rename", "to": "x/c.go", "path": "x/b.go"}],
		"links": [{"kind": "doc", "url": "https://e.com/?q=1&r=2"}]}`)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := plan.Parse([]byte(doc(`{"links":[{"url":"https://e.com/?q=1\u0026r=2","kind":"doc"}],"files":[{"op":"create","path":"x/a.go"},
		{"op":"rename","path":"x/b.go","to":"x/c.go"}],"scope":["x/"],"instructions":"use a \u003c b\n","title":"Add \u003cb>"}`)))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"title":"Add <b>","instructions":"use a < b\n","files":[{"op":"create","path":"x/a.go"},{"op":"rename","path":"x/b.go","to":"x/c.go"}],` +
		`"links":[{"url":"https://e.com/?q=1&r=2","kind":"doc"}],"scope":["x/"]}`
	for _, d := range []plan.Document{a, b} {
		spec, err := d.Items[0].Spec()
		if err != nil {
			t.Fatal(err)
		}
		if string(spec) != want {
			t.Fatalf("Spec:\n got %s\nwant %s", spec, want)
		}
		back, err := plan.ParseSpec(spec)
		if err != nil {
			t.Fatalf("ParseSpec: %v", err)
		}
		if diff := cmp.Diff(d.Items[0], back); diff != "" {
			t.Fatalf("ParseSpec(Spec()) (-want +got):\n%s", diff)
		}
	}
	min, _ := plan.Item{Title: "t"}.Spec()
	if string(min) != `{"title":"t"}` {
		t.Fatalf("Spec of a title-only item: %s", min)
	}
}

func TestParseSpecRefuses(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`{"title": "t", "item": 1}`, `unknown field "item"`},
		{`{"instructions": "x"}`, `missing "title"`},
		{`{"title": "t", "links": [{"item": 0, "kind": "depends-on"}]}`, "links[0].item: 0 is not an item number: items are numbered 1, 2, 3, … in order"},
		{`{"title": "t"} {}`, "an object follows the document: a document is one JSON object"},
		{`{"title": "t", "files": [{"op": "create", "path": "/a"}]}`, `files[0].path: "/a" is absolute: paths are relative to the repository root`},
		{"{\"title\": \"\xff\"}", "not UTF-8: an invalid byte at offset 11"},
		{padTo(`{"title": "t"}`, plan.MaxSource+1), "the item is 1048577 bytes; at most 1048576 (1 MiB)"},
	} {
		if _, err := plan.ParseSpec([]byte(c.src)); err == nil || err.Error() != c.want {
			t.Errorf("ParseSpec(%.40q): %v, want %q", c.src, err, c.want)
		}
	}
}

func TestDeclaresScope(t *testing.T) {
	for _, c := range []struct {
		it   plan.Item
		want bool
	}{
		{plan.Item{Title: "t", Instructions: "do it"}, false},
		{plan.Item{Title: "t", Scope: []string{"web/"}}, true},
		{plan.Item{Title: "t", Files: []plan.FileOp{{Op: plan.OpModify, Path: "a.go"}}}, true},
	} {
		if got := c.it.DeclaresScope(); got != c.want {
			t.Errorf("%+v.DeclaresScope() = %v, want %v", c.it, got, c.want)
		}
	}
}

func TestInScope(t *testing.T) {
	it := plan.Item{Title: "t", Scope: []string{"web/", "cmd/main.go"},
		Files: []plan.FileOp{{Op: plan.OpRename, Path: "old/a.go", To: "new/a.go"}, {Op: plan.OpDelete, Path: "gone.txt"}}}
	for p, want := range map[string]bool{
		"web/server.go":        true,
		"web/static/app.js":    true,
		"web":                  false, // "web/" covers what is under web, not a file named web
		"website/index.html":   false,
		"cmd/main.go":          true,
		"cmd/main.go.orig":     false,
		"cmd/other.go":         false,
		"old/a.go":             true,
		"new/a.go":             true,
		"old/b.go":             false,
		"gone.txt":             true,
		"README.md":            false,
		"web/../secret/key.go": false, // not clean: never in scope
		"web//x":               false,
	} {
		if got := it.InScope(p); got != want {
			t.Errorf("InScope(%q) = %v, want %v", p, got, want)
		}
	}
	d := plan.Document{Items: []plan.Item{{Title: "a", Scope: []string{"a/"}}, {Title: "b", Scope: []string{"b/x"}}}}
	for p, want := range map[string]bool{"a/1": true, "b/x": true, "b/y": false, "c": false} {
		if got := d.InScope(p); got != want {
			t.Errorf("Document.InScope(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestTheFormatDocumentsExampleParses: docs/plan-format.md's complete
// example is a document Parse accepts, so the format's own page cannot
// drift from the parser.
func TestTheFormatDocumentsExampleParses(t *testing.T) {
	page, err := os.ReadFile("../docs/plan-format.md")
	if err != nil {
		t.Fatal(err)
	}
	const open = "<!-- example: complete -->\n```json\n"
	_, rest, ok := strings.Cut(string(page), open)
	if !ok {
		t.Fatalf("docs/plan-format.md has no %q block", open)
	}
	example, _, ok := strings.Cut(rest, "\n```")
	if !ok {
		t.Fatal("the example block is not closed")
	}
	d, err := plan.Parse([]byte(example))
	if err != nil {
		t.Fatalf("the documented example: %v", err)
	}
	// It shows every field: a reader learns the whole format from it.
	var ops, kinds = map[string]bool{}, map[string]bool{}
	var instructions, scopeDir, scopeFile bool
	for _, it := range d.Items {
		instructions = instructions || it.Instructions != ""
		for _, f := range it.Files {
			ops[f.Op] = true
		}
		for _, l := range it.Links {
			kinds[l.Kind] = true
		}
		for _, s := range it.Scope {
			if strings.HasSuffix(s, "/") {
				scopeDir = true
			} else {
				scopeFile = true
			}
		}
	}
	if len(ops) != 4 || len(kinds) != 3 || !instructions || !scopeDir || !scopeFile {
		t.Fatalf("the example does not show every field: operations %v, link kinds %v, instructions %v, scope dir %v, file %v",
			ops, kinds, instructions, scopeDir, scopeFile)
	}
}
