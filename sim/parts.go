package sim

import "github.com/codeboost/codeboost/sim/simenv"

// The world's parts, under the names the scenario language and the tests
// have always used (see package simenv).
type (
	Clock          = simenv.Clock
	Loop           = simenv.Loop
	Crash          = simenv.Crash
	GitHub         = simenv.GitHub
	Planner        = simenv.Planner
	PlanInvocation = simenv.PlanInvocation
)

var (
	// Epoch is where every world's clock starts.
	Epoch = simenv.Epoch
	// NewClock returns a clock at Epoch whose timers drain loop after firing.
	NewClock = simenv.NewClock
	// NewGitHub returns an empty simulated GitHub that traces to trace.
	NewGitHub = simenv.NewGitHub
	// NewPlanner returns a simulated planning provider that traces to trace.
	NewPlanner = simenv.NewPlanner
)
