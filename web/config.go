package web

import (
	"fmt"
	"regexp"

	"github.com/codeboost/codeboost/store"
)

// Task is one task this server serves: a repository and its plan identity
// under a name. A request selects a task by Name; the identity comes only
// from here, the server's trusted configuration.
type Task struct {
	Name       string         `json:"name"`
	Repository string         `json:"repository"`
	Identity   store.Identity `json:"-"`
}

// taskName is what a configured task may be called: it appears in URLs and
// in the screen, so it is short and plain.
var taskName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// CheckTaskName says why name cannot name a configured task, or nil.
func CheckTaskName(name string) error {
	if !taskName.MatchString(name) {
		return fmt.Errorf("task name %q: use 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit", name)
	}
	return nil
}
