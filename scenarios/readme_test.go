package scenarios

import (
	"flag"
	"os"
	"strings"
	"testing"

	cbts "github.com/codeboost/codeboost/testscript"
)

var update = flag.Bool("update", false, "rewrite generated files")

// TestReadme keeps scenarios/README.md generated from the commands' own
// definitions; run with -update after changing a command.
func TestReadme(t *testing.T) {
	tmpl, err := os.ReadFile("README.md.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(string(tmpl), "{{reference}}", cbts.Reference(), 1)
	got, _ := os.ReadFile("README.md")
	if string(got) == want {
		return
	}
	if *update {
		if err := os.WriteFile("README.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("scenarios/README.md is out of date; run: go test ./scenarios -run TestReadme -update")
}
