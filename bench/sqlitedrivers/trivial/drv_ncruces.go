//go:build ncruces

package main

import _ "github.com/ncruces/go-sqlite3/driver"

const drvName = "sqlite3"
