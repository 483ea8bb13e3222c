package main

import (
	"database/sql"
	"fmt"
)

func main() {
	db, err := sql.Open(drvName, ":memory:")
	if err != nil {
		panic(err)
	}
	var v string
	if err := db.QueryRow("SELECT sqlite_version()").Scan(&v); err != nil {
		panic(err)
	}
	fmt.Println(v)
}
