package main

import (
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/batontest"
)

// privilegeCase is a command run as a user short of privileges, and what
// its one line of error must name.
type privilegeCase struct {
	args  []string
	words []string
}

// checkPrivileges runs the cases as the DSN's user: each exits 1 with one
// line naming the missing privilege, not baton's routines or queries.
func checkPrivileges(t *testing.T, dsn string, cases []privilegeCase) {
	t.Helper()
	for _, c := range cases {
		code, _, errs := run(t, dsn, c.args...)
		expect(t, code, errs, exitError, "")
		for _, w := range c.words {
			if !strings.Contains(errs, w) {
				t.Errorf("baton %v: %q does not name %q", c.args, errs, w)
			}
		}
		for _, internal := range []string{"message_insert", "create migrations table", "not installed", "enqueue:"} {
			if strings.Contains(errs, internal) {
				t.Errorf("baton %v: %q names %q", c.args, errs, internal)
			}
		}
	}
}

func randomName() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "bt_np_" + hex.EncodeToString(b[:])
}

// asUser is dsn with another user (no password).
func asUser(t *testing.T, dsn, user string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(user)
	return u.String()
}

// TestPostgresPrivilegeErrors: a PostgreSQL user without privileges on
// baton's schema is told which privilege it lacks.
func TestPostgresPrivilegeErrors(t *testing.T) {
	dsn := batontest.NewDSN(t, "postgres")
	runOK(t, dsn, "migrate")
	db := batontest.SQLDB(t, dsn)
	role := randomName()
	if _, err := db.Exec("CREATE ROLE " + role + " LOGIN"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = db.Exec("DROP OWNED BY " + role)
		_, _ = db.Exec("DROP ROLE " + role)
	})
	schema := url.Values{}
	if u, err := url.Parse(dsn); err == nil {
		schema = u.Query()
	}
	user := asUser(t, dsn, role)
	checkPrivileges(t, user, []privilegeCase{
		{[]string{"locks"}, []string{"permission denied for schema", "USAGE"}},
		{[]string{"queue", "push", "q", "x"}, []string{"permission denied for schema", "USAGE"}},
	})
	if _, err := db.Exec("GRANT USAGE ON SCHEMA " + schema.Get("search_path") + " TO " + role); err != nil {
		t.Fatal(err)
	}
	checkPrivileges(t, user, []privilegeCase{
		{[]string{"locks"}, []string{"permission denied for table", "SELECT, INSERT, UPDATE and DELETE on its tables"}},
		{[]string{"queue", "push", "q", "x"}, []string{"permission denied for table", "SELECT, INSERT, UPDATE and DELETE on its tables"}},
	})
}

// TestMySQLPrivilegeErrors: a MySQL/MariaDB user without privileges on
// baton's database is told which privilege it lacks (exit 1, not 69).
func TestMySQLPrivilegeErrors(t *testing.T) {
	dsn := batontest.NewDSN(t, "mysql")
	runOK(t, dsn, "migrate")
	db := batontest.SQLDB(t, dsn)
	user := randomName()
	if _, err := db.Exec("CREATE USER '" + user + "'@'%'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = db.Exec("DROP USER '" + user + "'@'%'") })
	u, _ := url.Parse(dsn)
	dbName := strings.TrimPrefix(u.Path, "/")
	as := asUser(t, dsn, user)
	checkPrivileges(t, as, []privilegeCase{
		{[]string{"locks"}, []string{"Access denied", "baton needs SELECT, INSERT"}},
	})
	if _, err := db.Exec("GRANT SELECT ON `" + dbName + "`.* TO '" + user + "'@'%'"); err != nil {
		t.Fatal(err)
	}
	checkPrivileges(t, as, []privilegeCase{
		{[]string{"queue", "push", "q", "x"}, []string{"INSERT command denied", "baton needs SELECT, INSERT"}},
	})
}
