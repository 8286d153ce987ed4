// Command codeboost runs coding agents against tasks under the runner
// contract; see package cli for its commands and package app for what
// serve does.
package main

import (
	"os"

	"github.com/codeboost/codeboost/cmd/codeboost/cli"
)

func main() { os.Exit(cli.Run(os.Args[1:], cli.Options{})) }
