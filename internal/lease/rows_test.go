package lease

import (
	"testing"

	"github.com/batonhq/baton/driver"
)

// A release clears the rows of its scope only if no acquisition began or
// ended since it looked: a row stored meanwhile stays counted.
func TestRowsClear(t *testing.T) {
	x := driver.Ident{Kind: 0, NS: "ns", Name: "x"}
	y := driver.Ident{Kind: 0, NS: "ns", Name: "y"}
	other := driver.Ident{Kind: 0, NS: "other", Name: "x"}
	ns := driver.Ident{Kind: 0, NS: "ns"}
	var r Rows
	if rows, _ := r.Covered(x); rows {
		t.Fatal("a new session has rows")
	}
	r.Begin(x)
	rows, gen := r.Covered(ns)
	if !rows {
		t.Fatal("an acquisition under way is not counted in its namespace")
	}
	r.Done(x, true) // stored its row after the release looked
	r.Clear(ns, gen)
	if rows, _ := r.Covered(x); !rows {
		t.Fatal("a row stored after the release looked was forgotten")
	}
	r.Begin(y)
	r.Done(y, false)
	if rows, _ := r.Covered(y); rows {
		t.Fatal("an acquisition that stored nothing is counted")
	}
	r.Begin(other)
	r.Done(other, true)
	rows, gen = r.Covered(x)
	if !rows {
		t.Fatal("x's row is not counted")
	}
	r.Clear(x, gen)
	if rows, _ := r.Covered(ns); rows {
		t.Fatal("x's rows survived a release of x")
	}
	if rows, _ := r.Covered(other); !rows {
		t.Fatal("a release of ns/x cleared other/x")
	}
}
