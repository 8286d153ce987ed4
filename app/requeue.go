package app

import (
	"context"
	"log/slog"
)

// requeue is lane I3 at startup: "Restart recovery requeues the task"
// (decision 3). Recovery step 6 claimed requeue_pending for every task it
// listed; once the coordinator is open (step 8) and the other lanes have
// recovered, each listed task is resumed by codeboost, through the same
// admission as a person's "Resume" (runner.Requeue), which builds the
// task's workspace afresh.
//
// It runs before the review server listens, so the first screen a person
// sees already shows the requeued attempt rather than a Resume button that
// would then lose the claim. A refusal (the head moved under a completed
// prefix, the approvals changed, the budget is spent, no agent is
// configured) leaves the claim set and the task waiting for that person's
// Resume; it is logged, not fatal, because the rest of the server is still
// worth serving. --check runs startup and exits, so it requeues nothing:
// the attempts would only be stopped by the shutdown that follows.
func (a *App) requeue() {
	if a.opt.Check || !a.recovery.Opened() {
		return
	}
	for _, key := range a.recovery.Requeue {
		a.failpoints().Hook("app/before-requeue")
		switch resp, err := a.runner.Requeue(context.Background(), key); {
		case err != nil: // a refusal reads as its message
			a.decision(slog.LevelWarn, "requeue of "+key+" not admitted; it waits for a person's Resume", "err", err)
		case resp.Outcome == "admitted":
			a.decision(slog.LevelInfo, "requeued "+key+" after the restart", "attempt", resp.AttemptID)
		default:
			a.decision(slog.LevelInfo, "requeue of "+key+" answered "+resp.Outcome, "code", resp.Code, "message", resp.Message)
		}
	}
}
