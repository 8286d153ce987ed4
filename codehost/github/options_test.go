package github_test

import (
	"os"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/codehost/github"
)

func TestNew(t *testing.T) {
	for _, c := range []struct {
		name string
		opts github.Options
		ok   bool
	}{
		{"defaults", github.Options{Token: token}, true},
		{"enterprise", github.Options{BaseURL: "https://ghe.example.com/api/v3/", Token: token}, true},
		{"plain http", github.Options{BaseURL: "http://127.0.0.1:8080", Token: token}, true},
		{"no token", github.Options{}, false},
		{"token with a space", github.Options{Token: token + " x"}, false},
		{"token with a newline", github.Options{Token: token + "\n"}, false},
		{"ftp", github.Options{BaseURL: "ftp://example.com", Token: token}, false},
		{"relative", github.Options{BaseURL: "/api", Token: token}, false},
		{"no host", github.Options{BaseURL: "https://", Token: token}, false},
		{"does not parse", github.Options{BaseURL: "https://exa mple.com/%zz", Token: token}, false},
		{"credentials", github.Options{BaseURL: "https://user:" + token + "@example.com", Token: token}, false},
		{"query", github.Options{BaseURL: "https://example.com/?access_token=x", Token: token}, false},
		{"fragment", github.Options{BaseURL: "https://example.com/#x", Token: token}, false},
		{"user agent with a newline", github.Options{Token: token, UserAgent: "a\nb"}, false},
		// A space is no control character: "codeboost (planning)" is a fine
		// user agent. Sweep survivor (seed 60221): codehost/github/client.go:isControl:boundary:3160873b.
		{"user agent with a space", github.Options{Token: token, UserAgent: "codeboost (planning)"}, true},
		{"user agent with a DEL", github.Options{Token: token, UserAgent: "a\x7fb"}, false},
	} {
		_, err := github.New(c.opts)
		if (err == nil) != c.ok {
			t.Errorf("%s: New = %v, want ok %v", c.name, err, c.ok)
		}
		if err != nil {
			noToken(t, err)
		}
	}
}

func TestTokenFromEnv(t *testing.T) {
	const name = "CODEBOOST_TEST_GITHUB_TOKEN"
	t.Setenv(name, " "+token+"\n")
	if got, err := github.TokenFromEnv(name); got != token || err != nil {
		t.Errorf("TokenFromEnv = %q, %v; want the token, trimmed", got, err)
	}

	t.Setenv("GITHUB_TOKEN", "ghp_default")
	if got, err := github.TokenFromEnv(""); got != "ghp_default" || err != nil {
		t.Errorf(`TokenFromEnv("") = %q, %v; want GITHUB_TOKEN's value`, got, err)
	}

	t.Setenv(name, "  \n")
	if _, err := github.TokenFromEnv(name); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("an empty variable: %v, want an error saying so", err)
	}

	t.Setenv(name, token+" more")
	if _, err := github.TokenFromEnv(name); err == nil {
		t.Errorf("a token with a space inside: no error")
	} else {
		noToken(t, err)
	}

	os.Unsetenv(name) // t.Setenv restores it
	if _, err := github.TokenFromEnv(name); err == nil || !strings.Contains(err.Error(), "not set") {
		t.Errorf("an unset variable: %v, want an error saying so", err)
	}
}
