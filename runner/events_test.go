package runner

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEventsEnterThroughTheWrapper: every event enters the loop through
// events.go (post, call, goWork, afterFunc), which publishes the status
// snapshot when the event ends, so no event can forget it; and nothing
// outside it publishes on its own, schedules a timer or touches the loop.
func TestEventsEnterThroughTheWrapper(t *testing.T) {
	direct := regexp.MustCompile(`deps\.Loop\.|deps\.Clock\.AfterFunc|\bc\.publish\(\)`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "events.go" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if !direct.MatchString(line) {
				continue
			}
			// New publishes the first snapshot before any event runs.
			if f == "coordinator.go" && strings.TrimSpace(line) == "c.publish()" && inNew(string(b), i) {
				continue
			}
			t.Errorf("%s:%d: %s — enter the loop through events.go (post, call, goWork, afterFunc)", f, i+1, strings.TrimSpace(line))
		}
	}
}

// inNew reports whether line i of src lies in func New.
func inNew(src string, i int) bool {
	lines := strings.Split(src, "\n")
	for j := i; j >= 0; j-- {
		if strings.HasPrefix(lines[j], "func ") {
			return strings.HasPrefix(lines[j], "func New(")
		}
	}
	return false
}
