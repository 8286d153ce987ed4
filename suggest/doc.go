// Package suggest is the suggestion (E3) coordinator: the single in-process
// owner of planning requests, suggestions and drafts alike, per runner and
// Store (shared/seeds/002_…, "The coordinator is a single in-process owner
// per runner/store. Construct one instance, not one per HTTP request.").
//
// It decides; the Store and the provider act. All of its state belongs to
// its loop (runner.Loop): admission, the provider's start, timers,
// cancellation and settlement are each one event, and time comes only
// from the injected runner.Clock, so the simulator (sim.Loop, sim.Clock)
// replays every race as named steps. "The existing Store remains the only
// durable writer and the only Apply authority": the coordinator never
// allocates a plan revision and never trusts the provider with identity;
// it captures the plan identity, revision, snapshot and the Store's
// request ID before invocation, and every durable rule (the one pending
// request per plan, the publication compare-and-swap, the settlement
// guard, invalidation) is a Store transaction.
//
// It may import the runner's Loop and Clock interfaces, the Store, and the
// leaf packages ids, plan and words; never an HTTP server, a Docker client
// or the simulator.
//
// The contract's names in this package:
//
//	contract                         Go
//	SuggestionCoordinator            Coordinator
//	start() / beginSuggestions       Coordinator.Start → Tx.BeginPlanRequest
//	SuggestionHandle                 Handle (the provider's), Result (the outcome)
//	handle.cancel(reason)            Coordinator.Cancel (holds the handle map F would)
//	Store.completeSuggestions        Tx.CompletePlanRequest
//	settleSuggestion                 Tx.SettlePlanRequest
//	Store.cancelSuggestions          Tx.CancelPlanRequest
//	Store.applySuggestion/applyDraft Tx.ConsumePlanRequest
//	close()                          Coordinator.Close
//	E2 card validation               ValidateCards, ValidateDraft
//	PLANNING_BUDGET_MS               Config.Budget (DefaultBudget)
//	PLANNING_SHUTDOWN_GRACE_MS       Config.ShutdownGrace (DefaultShutdownGrace)
//	invocation running → completed/failed/cancelled/stale
//	                                 Result.State (words.Completed, Failed, Cancelled, Stale)
package suggest
