package demo

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// repository is the demo repository's name: a small Go command that counts
// lines, words and bytes. It exists only in the demo agent's diffs.
const repository = "wordcount"

// Repository is the name of the demo repository the demo plan is about. It
// is usable as a task identity's repository ID as it is.
func Repository() string { return repository }

// item is one plan item as the demo agent plays it: the plan document's
// fields, and what the agent shows while it works on it.
type item struct {
	title        string
	instructions string
	files        []string // modified, in the order the agent reads them
	grep         string   // the agent's search, and what it finds
	grepHit      string
	thought      string
	hunks        []hunk // its changes, in the order the agent makes them
	summary      string // the result's summary when it succeeds
	failure      []string
	failedTest   string // the test named in the diagnostic when it fails
}

// hunk is one change to a file of the demo repository. Its header's counts
// and new start are worked out from body, so the diff always parses.
type hunk struct {
	file     string
	oldStart int
	section  string   // the text after @@ … @@
	body     []string // unified diff lines: " ", "-" or "+" then the text
}

var items = []item{
	{
		title: "Count words separated by any Unicode space",
		instructions: "Count splits words on ASCII spaces only, so text with tabs or no-break spaces is miscounted. " +
			"Split with unicode.IsSpace, and add table tests for a tab, a no-break space and an empty line.",
		files:   []string{"count.go", "count_test.go"},
		grep:    `grep -n "strings.Split" *.go`,
		grepHit: `count.go:27:		s.Words += len(strings.Split(line, " "))`,
		thought: "Split on \" \" counts empty fields and ignores tabs; strings.FieldsFunc with unicode.IsSpace fixes both.",
		hunks: []hunk{
			{"count.go", 3, "package wordcount", []string{
				` import (`,
				` 	"bufio"`,
				` 	"io"`,
				` 	"strings"`,
				`+	"unicode"`,
				` )`,
			}},
			{"count.go", 24, "func Count(r io.Reader) (Stats, error) {", []string{
				` 	for sc.Scan() {`,
				` 		line := sc.Text()`,
				` 		s.Lines++`,
				`-		s.Words += len(strings.Split(line, " "))`,
				`+		s.Words += len(strings.FieldsFunc(line, unicode.IsSpace))`,
				` 		s.Bytes += len(line) + 1`,
				` 	}`,
			}},
			{"count_test.go", 10, "var countTests = []struct {", []string{
				` 	{"one word", "hello\n", Stats{Lines: 1, Words: 1, Bytes: 6}},`,
				` 	{"two words", "hello world\n", Stats{Lines: 1, Words: 2, Bytes: 12}},`,
				`+	{"tab", "hello\tworld\n", Stats{Lines: 1, Words: 2, Bytes: 12}},`,
				`+	{"no-break space", "hello\u00a0world\n", Stats{Lines: 1, Words: 2, Bytes: 13}},`,
				`+	{"empty line", "\n", Stats{Lines: 1, Words: 0, Bytes: 1}},`,
				` }`,
			}},
		},
		summary: "Words are split with unicode.IsSpace; added tests for a tab, a no-break space and an empty line.",
		failure: []string{
			`--- FAIL: TestCount (0.00s)`,
			`    --- FAIL: TestCount/no-break_space (0.00s)`,
			`        count_test.go:27: Count("hello\u00a0world\n").Words = 1, want 2`,
			`FAIL`,
			"FAIL\texample.com/wordcount\t0.012s",
		},
		failedTest: "TestCount/no-break_space",
	},
	{
		title: "Add a --top N flag",
		instructions: "Add a --top N flag that also prints the N most frequent words with their counts, " +
			"most frequent first and ties in alphabetical order. The default output stays as it is.",
		files:   []string{"main.go", "count.go"},
		grep:    `grep -n "flag\." main.go`,
		grepHit: `main.go:10:	flag.Parse()`,
		thought: "Count already fills Stats.Freq; Top sorts it, and main prints it after the totals.",
		hunks: []hunk{
			{"main.go", 9, "func main() {", []string{
				` func main() {`,
				`+	top := flag.Int("top", 0, "also print the ` + "`N`" + ` most frequent words")`,
				` 	flag.Parse()`,
				` 	s, err := wordcount.Count(os.Stdin)`,
			}},
			{"main.go", 20, "func main() {", []string{
				` 	fmt.Printf("%d %d %d\n", s.Lines, s.Words, s.Bytes)`,
				`+	for _, w := range wordcount.Top(s, *top) {`,
				`+		fmt.Printf("%7d %s\n", w.Count, w.Word)`,
				`+	}`,
				` }`,
			}},
			{"count.go", 34, "func Count(r io.Reader) (Stats, error) {", []string{
				` 	return s, sc.Err()`,
				` }`,
				`+`,
				`+// Top returns the n most frequent words, ties in alphabetical order.`,
				`+func Top(s Stats, n int) []WordCount {`,
				`+	out := make([]WordCount, 0, len(s.Freq))`,
				`+	for w, c := range s.Freq {`,
				`+		out = append(out, WordCount{Word: w, Count: c})`,
				`+	}`,
				`+	sort.Slice(out, func(i, j int) bool {`,
				`+		if out[i].Count != out[j].Count {`,
				`+			return out[i].Count > out[j].Count`,
				`+		}`,
				`+		return out[i].Word < out[j].Word`,
				`+	})`,
				`+	return out[:min(n, len(out))]`,
				`+}`,
			}},
		},
		summary: "Added --top N, printing the most frequent words after the totals, ties in alphabetical order.",
		failure: []string{
			`--- FAIL: TestTop (0.00s)`,
			`    count_test.go:52: Top(s, 2) = [{b 2} {a 2}], want [{a 2} {b 2}]`,
			`FAIL`,
			"FAIL\texample.com/wordcount\t0.009s",
		},
		failedTest: "TestTop",
	},
	{
		title:        "Document the flags in the README",
		instructions: "Describe what wordcount counts, how words are split, and the --top flag, with an example; add how to run the tests.",
		files:        []string{"README.md"},
		grep:         `grep -n "^#" README.md`,
		grepHit:      "README.md:1:# wordcount\nREADME.md:12:## Building",
		thought:      "The README predates --top; a usage section with one example covers it.",
		hunks: []hunk{
			{"README.md", 1, "", []string{
				` # wordcount`,
				` `,
				`-Counts lines, words and bytes.`,
				`+Counts lines, words and bytes of its input, like ` + "`wc`" + `, with words`,
				`+split on any Unicode space.`,
				`+`,
				`+## Usage`,
				`+`,
				`+    wordcount [--top N] < file.txt`,
				`+`,
				`+` + "`--top N`" + ` also prints the N most frequent words, most frequent first.`,
				` `,
			}},
			{"README.md", 12, "", []string{
				` ## Building`,
				` `,
				`     go build ./cmd/wordcount`,
				`+`,
				`+## Testing`,
				`+`,
				`+    go test ./...`,
			}},
		},
		summary: "The README describes word splitting and --top, with an example, and how to run the tests.",
		failure: []string{
			`--- FAIL: TestReadmeExample (0.01s)`,
			"    readme_test.go:18: README example `wordcount --top 2` printed 3 lines, want 2",
			`FAIL`,
			"FAIL\texample.com/wordcount\t0.015s",
		},
		failedTest: "TestReadmeExample",
	},
}

// planFormat is the plan document format the demo plan is written in.
const planFormat = "codeboost-plan/1"

// Plan is the demo plan: a plan document (JSON) with one item per change
// the demo agent knows how to make to the demo repository.
func Plan() []byte {
	type fileOp struct {
		Op   string `json:"op"`
		Path string `json:"path"`
	}
	type planItem struct {
		Title        string   `json:"title"`
		Instructions string   `json:"instructions"`
		Files        []fileOp `json:"files"`
		Scope        []string `json:"scope"`
	}
	doc := struct {
		Format string     `json:"format"`
		Title  string     `json:"title"`
		Items  []planItem `json:"items"`
	}{Format: planFormat, Title: "wordcount: Unicode words, --top and docs"}
	for _, it := range items {
		p := planItem{Title: it.title, Instructions: it.instructions, Scope: it.files}
		for _, f := range it.files {
			p.Files = append(p.Files, fileOp{Op: "modify", Path: f})
		}
		doc.Items = append(doc.Items, p)
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err) // fixed data of plain strings: cannot fail
	}
	return append(b, '\n')
}

// diff renders the first n hunks of it as a unified diff, one header per
// file, in the order the hunks were made. n beyond the hunks is all of them.
func (it item) diff(n int) string {
	n = min(n, len(it.hunks))
	var b strings.Builder
	var files []string
	byFile := map[string][]hunk{}
	for _, h := range it.hunks[:n] {
		if byFile[h.file] == nil {
			files = append(files, h.file)
		}
		byFile[h.file] = append(byFile[h.file], h)
	}
	for _, f := range files {
		fmt.Fprintf(&b, "diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n", f, f, f, f)
		hs := byFile[f]
		// Hunks of one file go in file order, each new start shifted by
		// what the hunks above it added.
		slices.SortStableFunc(hs, func(a, b hunk) int { return cmp.Compare(a.oldStart, b.oldStart) })
		shift := 0
		for _, h := range hs {
			old, add := h.counts()
			fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@", h.oldStart, old, h.oldStart+shift, add)
			if h.section != "" {
				b.WriteString(" " + h.section)
			}
			b.WriteString("\n")
			for _, l := range h.body {
				b.WriteString(l + "\n")
			}
			shift += add - old
		}
	}
	return b.String()
}

// counts is the hunk's line counts in the old and the new file.
func (h hunk) counts() (old, add int) {
	for _, l := range h.body {
		switch l[0] {
		case ' ':
			old++
			add++
		case '-':
			old++
		case '+':
			add++
		}
	}
	return old, add
}

// changes is how many lines the hunk adds and removes.
func (h hunk) changes() (plus, minus int) {
	for _, l := range h.body {
		switch l[0] {
		case '+':
			plus++
		case '-':
			minus++
		}
	}
	return plus, minus
}
