package codehost_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/codeboost/codeboost/codehost"
)

func TestDefinite(t *testing.T) {
	host := func(kind error) error {
		return &codehost.HostError{Op: "merge", Repo: "o/r", Number: 1, Status: 409, Kind: kind, Message: "m"}
	}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"refused", host(codehost.ErrRefused), true},
		{"not found", host(codehost.ErrNotFound), true},
		{"unauthorized", host(codehost.ErrUnauthorized), true},
		{"bad input", codehost.CheckNumber(0), true},
		{"wrapped refusal", fmt.Errorf("coordinator: %w", host(codehost.ErrRefused)), true},
		{"unknown outcome", &codehost.UnknownOutcomeError{Repo: "o/r", Number: 1, Err: context.DeadlineExceeded}, false},
		{"unknown sentinel", fmt.Errorf("x: %w", codehost.ErrUnknownOutcome), false},
		{"unavailable", host(codehost.ErrUnavailable), false},
		{"unclassified", errors.New("something else"), false},
		{"kindless", host(nil), false},
	} {
		if got := codehost.Definite(c.err); got != c.want {
			t.Errorf("%s: Definite(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

func TestErrorsClassify(t *testing.T) {
	unknown := error(&codehost.UnknownOutcomeError{Repo: "o/r", Number: 7, Message: "EOF", Err: context.Canceled})
	if !errors.Is(unknown, codehost.ErrUnknownOutcome) || !errors.Is(unknown, context.Canceled) {
		t.Errorf("%v: does not match both ErrUnknownOutcome and its cause", unknown)
	}
	var uo *codehost.UnknownOutcomeError
	if !errors.As(fmt.Errorf("wrapped: %w", unknown), &uo) || uo.Number != 7 {
		t.Errorf("errors.As does not find the *UnknownOutcomeError")
	}
	refused := error(&codehost.HostError{Op: "merge", Repo: "o/r", Number: 7, Status: 409, Kind: codehost.ErrRefused,
		Message: "Head branch was modified. Review and try the merge again."})
	want := "codehost: refused: merge o/r#7: HTTP 409: Head branch was modified. Review and try the merge again."
	if refused.Error() != want {
		t.Errorf("Error() = %q, want %q", refused.Error(), want)
	}
	if errors.Is(refused, codehost.ErrNotFound) {
		t.Errorf("a refusal matches ErrNotFound")
	}
	noReply := (&codehost.HostError{Op: "read issue", Repo: "o/r", Number: 1, Kind: codehost.ErrUnavailable}).Error()
	if !strings.Contains(noReply, "no reply") {
		t.Errorf("a status-less error does not say no reply came: %q", noReply)
	}
	long := (&codehost.HostError{Op: "merge", Repo: "o/r", Number: 1, Status: 422, Kind: codehost.ErrRefused,
		Message: strings.Repeat("x", 10000)}).Error()
	if len(long) > codehost.MaxMessage+100 {
		t.Errorf("a long host message makes a %d-byte error", len(long))
	}
}

func TestClip(t *testing.T) {
	for _, s := range []string{
		"", "short", " padded\n", "line\none\r\ttwo\x00", strings.Repeat("é", 400), strings.Repeat("a", 299) + "é",
		"bad \xff utf8", strings.Repeat("x", 1<<20),
	} {
		got := codehost.Clip(s)
		if len(got) > codehost.MaxMessage {
			t.Errorf("Clip(%.20q…): %d bytes", s, len(got))
		}
		if !utf8.ValidString(got) || strings.ContainsAny(got, "\n\r\t\x00") {
			t.Errorf("Clip(%.20q…) = %q: invalid UTF-8 or control characters", s, got)
		}
		if again := codehost.Clip(got); again != got {
			t.Errorf("Clip is not idempotent: %q then %q", got, again)
		}
	}
	if got := codehost.Clip("  fine message "); got != "fine message" {
		t.Errorf("Clip changed a short message: %q", got)
	}
}
