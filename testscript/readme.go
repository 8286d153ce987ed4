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
	b.WriteString("A leading `!` means the command must fail. The built-in testscript commands (`stdout`, `stderr`, `cmp`, `exec`, …) work as usual.\n\n")
	for _, c := range Commands {
		fmt.Fprintf(&b, "### %s\n\n`%s`\n\n%s.\n\n```\n%s\n```\n\n", c.Name, c.Usage, upper(c.Summary), c.Example)
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
