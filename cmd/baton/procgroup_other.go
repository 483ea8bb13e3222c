//go:build !unix

package main

import "os/exec"

// ownGroup is a no-op where there are no Unix process groups.
func ownGroup(*exec.Cmd) {}

// killGroup kills the command itself (its children may survive it).
func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
