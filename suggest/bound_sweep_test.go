package suggest_test

import (
	"strings"
	"testing"

	"github.com/codeboost/codeboost/store"
	"github.com/codeboost/codeboost/words"
)

// TestDiagnosticAtTheBoundIsKeptWhole: the Store's bound is a maximum, so
// a provider's diagnostic of exactly store.MaxDiagnostic bytes is what the
// caller is told, whole; one byte more is cut with "…" (TestBoundedProviderErrors).
// Sweep survivor (seed 5150): suggest/settlement.go:bound:boundary:299ee650.
func TestDiagnosticAtTheBoundIsKeptWhole(t *testing.T) {
	w := newWorld(t)
	id, h := w.start(w.key, store.ModeSuggestion)
	diag := strings.Repeat("d", store.MaxDiagnostic)
	w.fail(h, diag)
	r := w.want(id, words.Failed, store.RequestFailed, "")
	if r.Diagnostic != diag {
		t.Fatalf("a diagnostic of %d bytes came back as %d bytes ending %q", len(diag), len(r.Diagnostic), r.Diagnostic[max(0, len(r.Diagnostic)-8):])
	}
}
