//go:build none

package main

// baseline: database/sql only, no driver linked (binary fails at run time; only built for size/time)
const drvName = "none"
