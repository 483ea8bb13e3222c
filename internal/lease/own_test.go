package lease

import (
	"testing"

	"github.com/batonhq/baton/driver"
)

func TestOwnCovers(t *testing.T) {
	var o Own
	w := driver.Ident{Kind: 1, NS: "a", Name: "w"}
	r := driver.Ident{Kind: 1, NS: "a", Name: "r"}
	other := driver.Ident{Kind: 1, NS: "b", Name: "w"}
	o.Granted([]driver.Ident{w}, driver.ModeWrite)
	o.Granted([]driver.Ident{w, r}, driver.ModeRead) // a read under the write keeps it
	for _, c := range []struct {
		id   driver.Ident
		mode driver.LockMode
		want bool
	}{
		{w, driver.ModeWrite, true}, {w, driver.ModeRead, true},
		{r, driver.ModeRead, true}, {r, driver.ModeWrite, false},
		{other, driver.ModeRead, false},
	} {
		if got := o.Covers(c.id, c.mode); got != c.want {
			t.Errorf("Covers(%v, %s) = %v, want %v", c.id, c.mode, got, c.want)
		}
	}
	o.Granted([]driver.Ident{other}, driver.ModeWrite)
	o.Forget(driver.Ident{Kind: 1, NS: "a", Name: "r"})
	if o.Covers(r, driver.ModeRead) || !o.Covers(w, driver.ModeRead) {
		t.Fatal("a name's release forgot more or less than the name")
	}
	o.Forget(driver.Ident{Kind: 1, NS: "a"})
	if o.Covers(w, driver.ModeRead) || !o.Covers(other, driver.ModeWrite) {
		t.Fatal("a namespace's release forgot more or less than the namespace")
	}
}

func TestOwnScopes(t *testing.T) {
	var o Own
	o.Granted([]driver.Ident{{Kind: 1, NS: "a", Name: "x"}, {Kind: 1, NS: "a", Name: "y"}, {Kind: 2, NS: "a", Name: "x"}}, driver.ModeWrite)
	o.Granted([]driver.Ident{{Kind: 1, NS: "b", Name: "x"}}, driver.ModeRead)
	got := map[driver.Ident]bool{}
	for _, s := range o.Scopes() {
		if s.Name != "" || got[s] {
			t.Fatalf("scope %v: a name, or twice", s)
		}
		got[s] = true
	}
	if len(got) != 3 || !got[driver.Ident{Kind: 1, NS: "a"}] || !got[driver.Ident{Kind: 2, NS: "a"}] || !got[driver.Ident{Kind: 1, NS: "b"}] {
		t.Fatalf("scopes %v, want (1, a), (2, a), (1, b)", got)
	}
	o.Forget(driver.Ident{Kind: 1, NS: "a"})
	if s := o.Scopes(); len(s) != 2 {
		t.Fatalf("scopes after a namespace's release: %v", s)
	}
}
