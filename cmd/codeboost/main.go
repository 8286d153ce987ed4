// Command codeboost runs coding agents against tasks under the runner
// contract; see package cli for its commands.
package main

import (
	"os"

	"github.com/codeboost/codeboost/cmd/codeboost/cli"
)

func main() { os.Exit(cli.Run(os.Args[1:])) }
