//go:build mattn

package main

import _ "github.com/mattn/go-sqlite3"

const drvName = "sqlite3"
