package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/codeboost/codeboost/dadapter"
	"github.com/codeboost/codeboost/words"
)

// run is the invocation's whole life, on its own goroutine: setup, the
// watch, the stop escalation and the cleanup, and the settlement only
// after all of them, so that a handle never settles while something it
// started may still run unrecorded (decision 4).
//
// A setup failure (a missing image, a refused create, an engine that does
// not answer) settles with ExitCode -1, the diagnostic "launch setup
// failed: …" and, unless a stop came first, the stop reason
// capture-failure: the contract has no reason of its own for it, and
// capture-failure is what it words "D could not run or follow the agent"
// with elsewhere (a settlement after a failed cleanup carries it too).
func (h *handle) run() {
	a := &agent{}
	var notes []string
	if err := h.launch(a); err != nil {
		h.stop(words.StopCaptureFailure, bound("launch setup failed: "+err.Error()))
	} else {
		h.watch(a)
	}
	c := &cleanup{opt: h.d.opt}
	if err := h.escalate(c, a); err != nil {
		notes = append(notes, err.Error())
	}
	unreleased, err := h.release(c, a)
	if err != nil {
		notes = append(notes, err.Error())
		h.stop(words.StopCaptureFailure, "")
	}
	a.teardown()
	closeSink(h.in.Output) // the capture has stopped: before the settlement
	h.settle(h.settlement(a, unreleased, notes))
}

// watch waits for the agent to exit on its own, or for the first stop.
func (h *handle) watch(a *agent) {
	select {
	case e := <-a.exited:
		if e.err != nil {
			// The agent may still run: it is stopped like any other, and
			// its exit code is unknown (the wait has no second answer).
			a.exited = nil
			h.stop(words.StopCaptureFailure, bound("stopped: lost the wait for the agent's exit: "+e.err.Error()))
			return
		}
		a.status = &e
		if !h.drained(a) {
			h.stop(words.StopCaptureFailure, "stopped: the agent exited but its output did not end")
		}
	case <-h.ctx.Done():
	}
}

// drained waits, at most CallTimeout, for the output stream to end: the
// engine may answer the wait before it has passed on the last output.
func (h *handle) drained(a *agent) bool {
	t := time.NewTimer(h.d.opt.CallTimeout)
	defer t.Stop()
	select {
	case <-a.captured:
		return true
	case <-t.C:
		return false
	}
}

// escalate stops an agent that may still run: SIGTERM, and the engine's
// SIGKILL once Grace is over (the init passes SIGTERM to the agent, and
// the kill takes every process of the container); if the stop call itself
// fails, a kill. After a stop it collects the exit code and the last
// output, each bounded by CallTimeout.
func (h *handle) escalate(c *cleanup, a *agent) error {
	if a.id == "" || a.status != nil {
		return nil
	}
	grace := graceSeconds(h.d.opt.Grace)
	err := c.call(h.d.opt.Grace, func(ctx context.Context) error {
		_, err := h.d.cli.ContainerStop(ctx, a.id, client.ContainerStopOptions{Signal: "SIGTERM", Timeout: &grace})
		return gone(err)
	})
	if err == nil {
		h.collect(a)
		return nil
	}
	h.d.opt.Log.Warn("docker: stop failed, killing", "attempt", h.in.AttemptID, "container", a.id, "err", err)
	if kerr := c.call(0, func(ctx context.Context) error {
		_, err := h.d.cli.ContainerKill(ctx, a.id, client.ContainerKillOptions{Signal: "SIGKILL"})
		return notRunning(err)
	}); kerr != nil {
		return fmt.Errorf("could not stop the agent container %s: %v; nor kill it: %v", short(a.id), err, kerr)
	}
	h.collect(a)
	return nil
}

// collect takes the exit code and lets the capture read to the stream's
// end, once the agent has stopped.
func (h *handle) collect(a *agent) {
	if a.exited != nil && a.status == nil {
		t := time.NewTimer(h.d.opt.CallTimeout)
		select {
		case e := <-a.exited:
			a.status = &e
		case <-t.C:
		}
		t.Stop()
	}
	ran := a.started
	if a.status == nil || a.status.err != nil {
		ran = h.inspectExit(a) || ran
	}
	if ran {
		h.drained(a)
	}
}

// inspectExit reads the stopped agent's exit code from the engine when the
// wait gave none, and reports whether the agent ran. The wait's stream can
// fail as the container is killed, and the setup may never have waited at
// all: a stop that comes while the start is in flight cuts the start's
// call short, though the engine may have carried it out and the agent run
// (both seen on a loaded machine, the second as a killed agent settled
// with exit -1). So whether the agent ran is the engine's to say, not the
// start's answer: a container that exited keeps its exit code until it is
// removed; one never started (or whose start failed) is "created", and its
// exit code is none of the agent's.
func (h *handle) inspectExit(a *agent) bool {
	ctx, cancel := context.WithTimeout(context.Background(), h.d.opt.CallTimeout)
	defer cancel()
	res, err := h.d.cli.ContainerInspect(ctx, a.id, client.ContainerInspectOptions{})
	if err != nil || res.Container.State == nil {
		return false
	}
	st := res.Container.State
	if st.Status != container.StateExited {
		return false
	}
	a.status = &exit{code: st.ExitCode}
	return true
}

// release removes the agent container, retried within the cleanup window;
// what it could not remove is the settlement's Unreleased, with the
// creation-time ID (when the create answered) and the ownership label.
func (h *handle) release(c *cleanup, a *agent) ([]dadapter.Resource, error) {
	if a.id == "" && !a.unknown {
		return nil, nil
	}
	err := c.retry(func(ctx context.Context) error { return h.remove(ctx, a) })
	if err == nil {
		return nil, nil
	}
	h.d.opt.Log.Error("docker: agent container not removed", "attempt", h.in.AttemptID, "container", a.id, "err", err)
	what := "the agent container " + short(a.id)
	if a.id == "" {
		what = "the agent container " + h.spec.Name + " (its create did not answer)"
	}
	return []dadapter.Resource{{Kind: dadapter.KindContainer, ID: a.id, Label: LabelAttempt + "=" + h.in.AttemptID}},
		fmt.Errorf("could not remove %s within the cleanup window: %v", what, err)
}

// remove removes the agent container by the ID captured at its create,
// which proves ownership on its own. When the create's answer never came,
// it first looks for the container by its name, and takes it only when all
// three owner labels match.
func (h *handle) remove(ctx context.Context, a *agent) error {
	if a.id == "" {
		id, err := h.lookup(ctx)
		if err != nil || id == "" {
			a.unknown = err != nil
			return err
		}
		a.id = id
	}
	_, err := h.d.cli.ContainerRemove(ctx, a.id, client.ContainerRemoveOptions{Force: true})
	return gone(err)
}

// lookup finds the container a create without an answer may have made.
func (h *handle) lookup(ctx context.Context) (string, error) {
	owner := dadapter.StorageOwner{RunnerOwner: h.in.RunnerOwner, AttemptID: h.in.AttemptID,
		AllocationID: h.spec.Config.Labels[LabelAllocation]}
	f := make(client.Filters).Add("name", h.spec.Name).Add("label", LabelAttempt+"="+h.in.AttemptID)
	res, err := h.d.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return "", err
	}
	for _, c := range res.Items {
		for _, n := range c.Names {
			if n == "/"+h.spec.Name && matches(c.Labels, owner) {
				return c.ID, nil
			}
		}
	}
	return "", nil
}

// settlement is what the handle settles with: the first stop reason, the
// exit code from the wait or the engine's record (-1 when neither gave
// one), the bounded result, and
// D's words for its own stop and for what went wrong in cleanup.
func (h *handle) settlement(a *agent, unreleased []dadapter.Resource, notes []string) dadapter.Settlement {
	reason, why := h.stopReason()
	s := dadapter.Settlement{StopReason: reason, ExitCode: -1, Unreleased: unreleased}
	if a.status == nil && a.exited != nil {
		select {
		case e := <-a.exited:
			a.status = &e
		default:
		}
	}
	if a.status != nil && a.status.err == nil {
		s.ExitCode = a.status.code
	}
	if a.capture != nil {
		s.Output, s.Stderr = a.capture.result, a.capture.errTail.buf
	}
	if why != "" {
		notes = append([]string{why}, notes...)
	}
	s.Diagnostic = bound(strings.Join(notes, "; "))
	return s
}

// teardown ends what setup left open: the output stream (the capture
// goroutine returns once it is closed) and the wait's request.
func (a *agent) teardown() {
	if a.stream != nil {
		a.capture.setClosing()
		a.stream.Close()
		<-a.captured
	}
	if a.endWait != nil {
		a.endWait()
	}
}

// cleanup bounds stopping and removing (decision 4): every call is bounded
// by CallTimeout, and once one has failed, the calls that follow share a
// window of CleanupWindow from that failure, retried every CleanupRetry,
// each getting only what is left of the window. So a handle settles even
// when the engine hangs or cannot be reached: at worst Grace + CallTimeout
// (a stop that fails) + CleanupWindow after the stop began.
type cleanup struct {
	opt Options
	end time.Time // the window's end; zero until a call fails
}

// call runs one engine call of the cleanup. extra lengthens its bound by
// what the engine itself waits (a stop's grace). Cleanup is never
// cancelled: its context is its own, not the handle's.
func (c *cleanup) call(extra time.Duration, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.opt.CallTimeout+extra)
	defer cancel()
	if !c.end.IsZero() {
		var cancelWindow context.CancelFunc
		ctx, cancelWindow = context.WithDeadline(ctx, c.end)
		defer cancelWindow()
	}
	err := f(ctx)
	if err != nil && c.end.IsZero() {
		c.end = time.Now().Add(c.opt.CleanupWindow)
	}
	return err
}

// retry runs f until it succeeds or the window has no room for another
// try, starting a try every CleanupRetry (at once when one took longer).
// Its error is the engine's last answer: a try the window's end cut short
// says only that time ran out, so the refusal before it is what the
// caller is told.
func (c *cleanup) retry(f func(context.Context) error) error {
	var last error
	for {
		began := time.Now()
		err := c.call(0, f)
		if err == nil {
			return nil
		}
		if last == nil || !errors.Is(err, context.DeadlineExceeded) {
			last = err
		}
		next := began.Add(c.opt.CleanupRetry)
		if !next.Before(c.end) {
			return last
		}
		time.Sleep(time.Until(next))
	}
}

// call runs one engine call bounded by CallTimeout and by ctx: no call of
// D's waits on the engine for longer.
func (d *D) call(ctx context.Context, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, d.opt.CallTimeout)
	defer cancel()
	return f(ctx)
}

// gone treats "no such object" as done: what cleanup wanted is true.
func gone(err error) error {
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	return err
}

// notRunning treats a kill's conflict as done: the engine refuses to kill
// a container that is not running (D never pauses an agent, nor gives it
// a restart policy), which is what the kill wanted. A stop whose call gave
// up may yet have been carried out, its answer late on a loaded engine.
func notRunning(err error) error {
	if cerrdefs.IsConflict(err) {
		return nil
	}
	return gone(err)
}

// short is the form of a Docker ID people read.
func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
