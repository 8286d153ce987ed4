package codehost_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/codehost"
)

func TestCheckRepo(t *testing.T) {
	for _, c := range []struct {
		repo string
		ok   bool
	}{
		{"octo/hello", true},
		{"Octo-Org/hello_world.go", true},
		{"a/b", true},
		{"o/..x", true},
		{"../x", false},
		{"./x", false},
		{"x/..", false},
		{"x/.", false},
		{"x", false},
		{"", false},
		{"a/b/c", false},
		{"/b", false},
		{"a/", false},
		{"a b/c", false},
		{"a/b?x=1", false},
		{"a/b%2f", false},
		{"a/b\n", false},
		{"ä/b", false},
		{strings.Repeat("a", 100) + "/" + strings.Repeat("b", 100), false},
	} {
		err := codehost.CheckRepo(c.repo)
		if (err == nil) != c.ok {
			t.Errorf("CheckRepo(%q) = %v, want ok %v", c.repo, err, c.ok)
		}
		if err != nil && !errors.Is(err, codehost.ErrBadInput) {
			t.Errorf("CheckRepo(%q) = %v, not ErrBadInput", c.repo, err)
		}
		if err != nil && len(err.Error()) > 200 {
			t.Errorf("CheckRepo(%q): unbounded message %d bytes", c.repo, len(err.Error()))
		}
	}
	owner, name, err := codehost.SplitRepo("octo/hello")
	if owner != "octo" || name != "hello" || err != nil {
		t.Errorf("SplitRepo = %q, %q, %v", owner, name, err)
	}
}

func TestCheckNumberAndSHA(t *testing.T) {
	for _, n := range []int{0, -1} {
		if err := codehost.CheckNumber(n); !errors.Is(err, codehost.ErrBadInput) {
			t.Errorf("CheckNumber(%d) = %v, want ErrBadInput", n, err)
		}
	}
	if err := codehost.CheckNumber(1); err != nil {
		t.Errorf("CheckNumber(1) = %v", err)
	}
	good := strings.Repeat("0123456789", 4)
	if err := codehost.CheckSHA(good); err != nil {
		t.Errorf("CheckSHA(%q) = %v", good, err)
	}
	for _, sha := range []string{"", "abc", strings.ToUpper(strings.Repeat("ab", 20)), good + "0",
		good[:39] + "g", strings.Repeat("a", 64), strings.Repeat("x", 10000)} {
		err := codehost.CheckSHA(sha)
		if !errors.Is(err, codehost.ErrBadInput) {
			t.Errorf("CheckSHA(%q) = %v, want ErrBadInput", sha, err)
		} else if len(err.Error()) > 200 {
			t.Errorf("CheckSHA: unbounded message %d bytes", len(err.Error()))
		}
	}
}
