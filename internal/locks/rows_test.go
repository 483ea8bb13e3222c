package locks

import (
	"testing"

	"github.com/batonhq/baton/driver"
)

// Two names of namespace ns, and the namespace itself as a release's scope.
var (
	rowsX  = driver.Ident{Kind: 0, NS: "ns", Name: "x"}
	rowsY  = driver.Ident{Kind: 0, NS: "ns", Name: "y"}
	rowsNS = driver.Ident{Kind: 0, NS: "ns"}
)

// A release clears the rows of its scope only if no acquisition began or
// ended since it looked: a row stored meanwhile stays counted.
func TestRowsClear(t *testing.T) {
	x, y, ns := rowsX, rowsY, rowsNS
	other := driver.Ident{Kind: 0, NS: "other", Name: "x"}
	var r Rows
	if rows, _, _, _ := r.Covered(x); rows {
		t.Fatal("a new session has rows")
	}
	r.Begin(x)
	rows, _, _, gen := r.Covered(ns)
	if !rows {
		t.Fatal("an acquisition under way is not counted in its namespace")
	}
	r.Done(x, true) // stored its row after the release looked
	r.Clear(ns, gen)
	if rows, _, _, _ := r.Covered(x); !rows {
		t.Fatal("a row stored after the release looked was forgotten")
	}
	r.Begin(y)
	r.Done(y, false)
	if rows, _, _, _ := r.Covered(y); rows {
		t.Fatal("an acquisition that stored nothing is counted")
	}
	r.Begin(other)
	r.Done(other, true)
	rows, _, _, gen = r.Covered(x)
	if !rows {
		t.Fatal("x's row is not counted")
	}
	r.Clear(x, gen)
	if rows, _, _, _ := r.Covered(ns); rows {
		t.Fatal("x's rows survived a release of x")
	}
	if rows, _, _, _ := r.Covered(other); !rows {
		t.Fatal("a release of ns/x cleared other/x")
	}
}

// Covered names the one identifier of a scope where the session may have
// rows, counting acquisitions under way, and none when there are two.
func TestRowsSole(t *testing.T) {
	x, y, ns := rowsX, rowsY, rowsNS
	other := driver.Ident{Kind: 0, NS: "other", Name: "z"}
	var r Rows
	sole := func(scope driver.Ident) (driver.Ident, bool) {
		_, id, one, _ := r.Covered(scope)
		return id, one
	}
	if _, one := sole(ns); one {
		t.Fatal("a new session has a sole identifier with rows")
	}
	r.Begin(x)
	r.Done(x, true)
	r.Begin(other)
	r.Done(other, true)
	if id, one := sole(ns); !one || id != x {
		t.Fatalf("Sole(ns) = %v, %v; want x", id, one)
	}
	r.Begin(x) // a second acquisition of x, under way: still one identifier
	if id, one := sole(ns); !one || id != x {
		t.Fatalf("with x under way, Sole(ns) = %v, %v; want x", id, one)
	}
	r.Begin(y) // y under way: two
	if _, one := sole(ns); one {
		t.Fatal("Sole(ns) with rows possible on x and y")
	}
	if id, one := sole(y); !one || id != y {
		t.Fatalf("Sole(y) = %v, %v; want y", id, one)
	}
}

// Any counts acquisitions under way and rows left in any scope.
func TestRowsAny(t *testing.T) {
	x := driver.Ident{Kind: 0, NS: "ns", Name: "x"}
	var r Rows
	if r.Any() {
		t.Fatal("a new session has rows")
	}
	r.Begin(x)
	if !r.Any() {
		t.Fatal("an acquisition under way is not counted")
	}
	r.Done(x, false)
	if r.Any() {
		t.Fatal("an acquisition that stored nothing is counted")
	}
	r.Begin(x)
	r.Done(x, true)
	_, _, _, gen := r.Covered(x)
	if !r.Any() {
		t.Fatal("a stored row is not counted")
	}
	r.Clear(driver.Ident{Kind: 0, NS: "ns"}, gen)
	if r.Any() {
		t.Fatal("rows survived a release of their namespace")
	}
}
