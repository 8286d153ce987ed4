// Package web is the review server: the HTTP API over the runner and the
// Store, the user-action protocol at the HTTP layer, shutdown steps 1 to 3
// as the server sees them, the metrics, and the review screen (static assets
// embedded in the binary).
//
// The server owns no durable truth and makes no decision the runner or the
// Store makes. It validates input (an action ID is a lowercase UUID v4
// before any transaction, bodies are bounded), selects a configured task by
// its name (the plan identity comes only from the server's configuration,
// never from a request), hands every writing action to the coordinator's
// loop (runner.Coordinator), and maps outcomes to HTTP: a refusal is 409
// with the current state, ShuttingDown is 503 "The review server is
// shutting down.", a storage error is 500 and is not recorded.
//
// Its timers (the drain limit) run on the injected runner.Clock, so the
// scenarios drive them; it may import runner, store, dadapter and the leaf
// packages, never sim or testscript.
package web
