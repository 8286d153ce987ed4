package codehost

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The sentinels a caller classifies errors with (errors.Is). Every error
// this package's implementations return wraps exactly one of them.
var (
	// ErrBadInput is an argument refused before any request was sent.
	ErrBadInput = errors.New("codehost: bad input")
	// ErrNotFound is a host's 404 (or 410), or an issue number that names a
	// pull request: the thing asked for is not there, or not visible to
	// this token.
	ErrNotFound = errors.New("codehost: not found")
	// ErrRefused is a definite refusal that changed nothing: not mergeable
	// (405), head moved (409), validation failed (422).
	ErrRefused = errors.New("codehost: refused")
	// ErrUnauthorized is a 401 or 403: the token is missing, wrong, or may
	// not do this. Retrying will not help until someone fixes the token.
	ErrUnauthorized = errors.New("codehost: unauthorized")
	// ErrUnavailable is a read that got no usable answer (a network
	// failure, a 5xx, a malformed or oversized body): try again later.
	// Merge never returns it; its equivalent there is ErrUnknownOutcome.
	ErrUnavailable = errors.New("codehost: host unavailable")
	// ErrUnknownOutcome is a merge that may or may not have happened. It
	// is wrapped by *UnknownOutcomeError.
	ErrUnknownOutcome = errors.New("codehost: merge outcome unknown")
)

// MaxMessage bounds, in bytes, every message an error carries from the
// host, so that a hostile or broken host cannot flood logs and the UI.
const MaxMessage = 300

// HostError is a definite answer from the host, or a read that got none.
// Kind is one of the sentinels above (errors.Is matches it); Err, when set,
// is the underlying cause (a transport error, ctx.Err()), so that
// errors.Is(err, context.DeadlineExceeded) works too.
type HostError struct {
	Op      string // "read issue", "read pull request" or "merge"
	Repo    string
	Number  int
	Status  int    // the HTTP status; 0 when no reply came
	Message string // the host's message or the failure, already bounded (Clip)
	Kind    error
	Err     error
}

func (e *HostError) Error() string {
	return describe(e.Kind, e.Op, e.Repo, e.Number, e.Status, e.Message)
}

// Unwrap gives errors.Is and errors.As both the kind and the cause.
func (e *HostError) Unwrap() []error { return causes(e.Kind, e.Err) }

// UnknownOutcomeError is a merge request whose outcome is unknown: it may
// have merged. The caller must keep the merge in flight and read the pull
// request again; it must never retry blindly or record "not merged".
type UnknownOutcomeError struct {
	Repo    string
	Number  int
	Status  int    // the HTTP status; 0 when no reply came
	Message string // what went wrong, already bounded (Clip)
	Err     error  // the underlying cause, if any
}

func (e *UnknownOutcomeError) Error() string {
	return describe(ErrUnknownOutcome, "merge", e.Repo, e.Number, e.Status, e.Message) +
		" (the pull request must be read again before anything assumes it unmerged)"
}

// Unwrap makes errors.Is(err, ErrUnknownOutcome) hold, and keeps the cause
// reachable.
func (e *UnknownOutcomeError) Unwrap() []error { return causes(ErrUnknownOutcome, e.Err) }

func causes(errs ...error) []error {
	var out []error
	for _, err := range errs {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

func describe(kind error, op, repo string, number, status int, message string) string {
	var b strings.Builder
	if kind == nil {
		kind = errors.New("codehost: error")
	}
	fmt.Fprintf(&b, "%v: %s %s#%d", kind, op, Clip(repo), number)
	if status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", status)
	} else {
		b.WriteString(": no reply")
	}
	if m := Clip(message); m != "" {
		b.WriteString(": ")
		b.WriteString(m)
	}
	return b.String()
}

// Definite reports whether err, returned by Merge, is a definite refusal:
// the host merged nothing for sure, so the caller may record the merge as
// not done. It is false for nil, for an unknown outcome, and for any error
// it cannot classify, because treating an unclassified error as "not
// merged" is the one mistake the merge boundary cannot afford.
func Definite(err error) bool {
	if err == nil || errors.Is(err, ErrUnknownOutcome) {
		return false
	}
	return errors.Is(err, ErrRefused) || errors.Is(err, ErrNotFound) ||
		errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrBadInput)
}

// Clip makes s fit to show in an error, a log line or the UI: valid UTF-8,
// control characters (newlines included) turned into spaces, trimmed, and
// at most MaxMessage bytes, ending in "…" when cut. Clip(Clip(s)) ==
// Clip(s).
func Clip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) <= MaxMessage {
		return s
	}
	const ellipsis = "…"
	cut := MaxMessage - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimSpace(s[:cut]) + ellipsis
}
