package main

import (
	"testing"

	cbts "github.com/codeboost/codeboost/testscript"
	gts "github.com/rogpeppe/go-internal/testscript"
)

func TestTmp(t *testing.T) { gts.Run(t, cbts.Params("/tmp/bc/td", cbts.Options{})) }
