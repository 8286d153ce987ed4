package app_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/codeboost/codeboost/app"
	"github.com/codeboost/codeboost/dadapter/nodocker"
)

// fakeEngine is an engine that answers but lacks every image.
type fakeEngine struct {
	nodocker.D
	closed int
}

func (e *fakeEngine) CheckImage(ctx context.Context, image string) error {
	return errors.New("the image " + image + " is not on the engine")
}

func (e *fakeEngine) Close() error { e.closed++; return nil }

// TestAgentNeedsAnEngine: a configured agent image is never a silent
// fallback to no D. Without an engine opener (a build that runs no agent),
// with an engine that does not answer, and with an image the engine lacks,
// startup fails saying which, and the engine it opened is closed; each
// time the lock is released, so the next start can take it.
func TestAgentNeedsAnEngine(t *testing.T) {
	_, db, _ := firstStart(t)
	agent := app.RunnerConfig{Agent: app.AgentConfig{Image: "codeboost-agent:missing", CommitLimit: 1 << 20}}
	opened := &fakeEngine{}
	var told app.EngineOptions
	for _, c := range []struct {
		name   string
		engine app.OpenEngine
		want   string
	}{
		{"no-engine-in-this-build", nil, "this build of codeboost opens no container engine"},
		{"engine-does-not-answer", func(context.Context, app.EngineOptions) (app.Engine, error) {
			return nil, errors.New("the Docker engine at unix:///gone.sock does not answer")
		}, "an agent is configured, but the Docker engine at unix:///gone.sock does not answer"},
		{"image-missing", func(_ context.Context, opt app.EngineOptions) (app.Engine, error) {
			told = opt
			return opened, nil
		}, "the agent image: the image codeboost-agent:missing is not on the engine"},
	} {
		t.Run(c.name, func(t *testing.T) {
			logs, _, err := runApp(t, app.Options{DB: db, Check: true, Runner: agent, Engine: c.engine})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("startup with %s: %v, want %q\n%s", c.name, err, c.want, logs)
			}
			if strings.Contains(logs, "runner open") {
				t.Errorf("admission opened:\n%s", logs)
			}
		})
	}
	if told.CommitLimit != 1<<20 || told.RunnerRoot == "" {
		t.Errorf("the engine was opened with %+v, want runner.agent.commitLimitBytes (1 MiB) and the runner root", told)
	}
	if opened.closed != 1 {
		t.Errorf("the engine whose image was missing was closed %d times, want once", opened.closed)
	}
	if logs, err := check(t, db); err != nil {
		t.Fatalf("a start without an agent after the failed ones: %v\n%s", err, logs)
	}
}
