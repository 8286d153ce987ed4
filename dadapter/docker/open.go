package docker

import (
	"context"
	"fmt"

	"github.com/moby/moby/client"

	"github.com/codeboost/codeboost/dadapter/docker/image"
)

// Open is how production gets the adapter: a client for the engine the
// environment names (DOCKER_HOST and friends, else the local socket), with
// the API version negotiated (engine 20.10 speaks 1.41), a ping that must
// answer, and the helper image built offline; opt's Client and HelperImage
// are these. The moby client stays inside this package: callers see only
// the adapter.
func Open(ctx context.Context, opt Options) (*D, error) {
	cli, err := client.New(client.FromEnv) // the client negotiates the API version by default (1.41 here)
	if err != nil {
		return nil, fmt.Errorf("the Docker client: %w", err)
	}
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		cli.Close()
		return nil, fmt.Errorf("the Docker engine at %s does not answer: %w", cli.DaemonHost(), err)
	}
	helper, err := image.Helper(ctx, cli)
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("the helper image: %w", err)
	}
	opt.Client, opt.HelperImage = cli, helper
	d, err := New(opt)
	if err != nil {
		cli.Close()
	}
	return d, err
}

// CheckImage reports whether the image ref is on the engine: codeboost
// never pulls, so a missing agent image is a startup error that says what
// to do.
func (d *D) CheckImage(ctx context.Context, ref string) error {
	if _, err := d.cli.ImageInspect(ctx, ref); err != nil {
		return fmt.Errorf("the image %q is not on the Docker engine (codeboost never pulls; load it with docker load or build it there): %w", ref, err)
	}
	return nil
}

// Close closes the engine client. Handles still running keep their own
// calls until they settle; call it after the runner has stopped.
func (d *D) Close() error { return d.cli.Close() }
