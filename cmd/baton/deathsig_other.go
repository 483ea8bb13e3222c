//go:build !linux

package main

import "os/exec"

// dieWithParent is Linux's parent-death signal; elsewhere a command may
// outlive a baton killed with SIGKILL.
func dieWithParent(*exec.Cmd) {}
