package scenarios

import "embed"

// Files holds every scenario, so that the codeboost binary can replay them
// on a machine with no source tree.
//
//go:embed testdata/*.txtar
var Files embed.FS
