//go:build !cgo

// Package cgo needs cgo: built with CGO_ENABLED=0 it registers nothing, and
// sqlite: DSNs stay on the default pure-Go driver.
package cgo
