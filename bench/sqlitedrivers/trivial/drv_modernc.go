//go:build modernc

package main

import _ "modernc.org/sqlite"

const drvName = "sqlite"
