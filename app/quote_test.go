package app

import "testing"

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/var/lib/codeboost/cb.db": "/var/lib/codeboost/cb.db",
		"/home/me/my db/cb.db":     `'/home/me/my db/cb.db'`,
		"/tmp/it's/cb.db":          `'/tmp/it'\''s/cb.db'`,
		"/tmp/$HOME/cb.db":         `'/tmp/$HOME/cb.db'`,
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
