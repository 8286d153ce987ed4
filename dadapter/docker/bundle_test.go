package docker

import (
	"strings"
	"testing"
)

// TestBundleRefTakesOnlyOneCommitOnTheBase: the commit container's bundle
// is the agent's work as one commit on the attempt's base, and the header
// is all F trusts of it before fetching: exactly one ref, exactly one
// prerequisite, and that prerequisite the base. A bundle with a second
// ref (a branch the agent made), no prerequisite (a whole history) or
// another base (work on a commit the attempt was not given) is refused
// before the runner-owned repository fetches it. No Docker is needed: the
// header is parsed from bytes.
// Sweep survivor (seed 8675309): dadapter/docker/commit.go:bundleRef:drop-guard:fe84e251.
func TestBundleRefTakesOnlyOneCommitOnTheBase(t *testing.T) {
	base := strings.Repeat("b", 40)
	work := strings.Repeat("c", 40)
	other := strings.Repeat("d", 40)
	bundle := func(header ...string) []byte {
		return []byte("# v2 git bundle\n" + strings.Join(header, "\n") + "\n\nPACK")
	}
	got, err := bundleRef(bundle("-"+base+" the base", work+" refs/heads/work"), base)
	if err != nil || got != work {
		t.Fatalf("one ref on the base: %q, %v; want %s", got, err, work)
	}
	for name, b := range map[string][]byte{
		"two refs":             bundle("-"+base+" the base", work+" refs/heads/work", other+" refs/heads/more"),
		"no ref":               bundle("-" + base + " the base"),
		"no prerequisite":      bundle(work + " refs/heads/work"),
		"two prerequisites":    bundle("-"+base+" the base", "-"+other+" another", work+" refs/heads/work"),
		"another prerequisite": bundle("-"+other+" another", work+" refs/heads/work"),
	} {
		if got, err := bundleRef(b, base); err == nil || !strings.Contains(err.Error(), "want one ref on "+base) {
			t.Errorf("%s: %q, %v; want the header refused", name, got, err)
		}
	}
}
