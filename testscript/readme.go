package testscript

import (
	"fmt"
	"sort"
	"strings"

	"github.com/codeboost/codeboost/failpoints"
)

// Reference renders the command and failpoint reference that
// scenarios/README.md embeds, from the commands' own definitions.
func Reference() string {
	var b strings.Builder
	b.WriteString("## Commands\n\n")
	b.WriteString("Every command below is defined in `testscript/`; this section is generated from those definitions (`go test ./scenarios -run TestReadme -update`).\n")
	b.WriteString("A leading `!` means the command must fail; only a command whose usage starts with `[!]` takes one. The built-in testscript commands (`stdout`, `stderr`, `cmp`, `exec`, …) work as usual.\n\n")
	b.WriteString("A command takes only the `key=value` arguments listed under it, each with the form of its value; a key it does not take (a misspelling), a key given twice, or a value of the wrong form fails the scenario at that line, naming the key. An argument that does not start with a lowercase `key=` is positional (and so is every argument of a command that reads its own grammar, such as `order`).\n\n")
	b.WriteString("Names say which is which: a command named for a change (`set-`, `new-`, `plant-`, `remove-`, `read-`, or a verb such as `admit` or `settle`) acts; a past participle (`traced`, `drained`, `d-cancelled`) or the name of what it checks (`attempt`, `slots`, `merge-row`) asserts.\n\n")
	for _, k := range []struct {
		kind  Kind
		title string
		intro string
	}{
		{Action, "Actions", "An action changes the world (a user action, a D answer, a crash, the clock), or reads it as production does and prints what it got for `stdout` to match."},
		{Assertion, "Assertions", "An assertion checks the world and fails the scenario on a mismatch, with a diff and the trace so far; it changes nothing."},
	} {
		fmt.Fprintf(&b, "### %s\n\n%s\n\n", k.title, k.intro)
		for _, c := range Commands {
			if c.Kind != k.kind {
				continue
			}
			fmt.Fprintf(&b, "#### %s\n\n`%s`\n\n%s.\n\n", c.Name, c.Usage, upper(c.Summary))
			switch {
			case c.Words:
				b.WriteString("Every argument is positional, read by the command's own grammar.\n\n")
			case c.Pos > 0:
				fmt.Fprintf(&b, "The first %d argument(s) are positional whatever they hold.\n\n", c.Pos)
			}
			if len(c.Keys) > 0 {
				parts := make([]string, len(c.Keys))
				for i, key := range c.Keys {
					parts[i] = fmt.Sprintf("`%s=%s`", key.Name, key.Value.Doc)
				}
				fmt.Fprintf(&b, "Keys: %s.\n\n", strings.Join(parts, ", "))
			}
			fmt.Fprintf(&b, "```\n%s\n```\n\n", c.Example)
		}
	}
	b.WriteString("## Failpoints\n\n")
	b.WriteString("Switch one on with `fail-point NAME [TERMS]`; hooks (`runner/before-…`) take a command with `at`. Mutants remove one guard each; a scenario names those it kills in a `# kills:` header line.\n\n")
	b.WriteString("| failpoint | what it simulates |\n| --- | --- |\n")
	names := make([]string, 0, len(failpoints.Catalog))
	for n := range failpoints.Catalog {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "| `%s` | %s |\n", n, failpoints.Catalog[n])
	}
	return b.String()
}

func upper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
