package app

import "testing"

// TestShellQuote: a path of the characters paths usually have, the ends of
// each range included (a path with a z in it is as plain as one with a y),
// is printed as it is; anything a shell reads is quoted.
// Kills the sweep's app/app.go:shellQuote:boundary:dc167948 (seed 8675309)
// and the other ends' boundary mutants.
func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/var/lib/codeboost/cb.db": "/var/lib/codeboost/cb.db",
		"/srv/azAZ09/cb.db":        "/srv/azAZ09/cb.db",
		"/home/me/my db/cb.db":     `'/home/me/my db/cb.db'`,
		"/tmp/it's/cb.db":          `'/tmp/it'\''s/cb.db'`,
		"/tmp/$HOME/cb.db":         `'/tmp/$HOME/cb.db'`,
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
