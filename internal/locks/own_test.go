package locks

import (
	"testing"

	"github.com/batonhq/baton/driver"
)

func TestOwnCovers(t *testing.T) {
	var o Own
	w := driver.Ident{Kind: 1, NS: "a", Name: "w"}
	r := driver.Ident{Kind: 1, NS: "a", Name: "r"}
	other := driver.Ident{Kind: 1, NS: "b", Name: "w"}
	o.Granted(grants(w), driver.ModeWrite)
	o.Granted(grants(w, r), driver.ModeRead) // a read under the write keeps it
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
	o.Granted(grants(other), driver.ModeWrite)
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
	o.Granted(grants(driver.Ident{Kind: 1, NS: "a", Name: "x"}, driver.Ident{Kind: 1, NS: "a", Name: "y"}, driver.Ident{Kind: 2, NS: "a", Name: "x"}), driver.ModeWrite)
	o.Granted(grants(driver.Ident{Kind: 1, NS: "b", Name: "x"}), driver.ModeRead)
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

// grants are a call's grants of ids, none an inline holder.
func grants(ids ...driver.Ident) []driver.Request {
	out := make([]driver.Request, len(ids))
	for i, id := range ids {
		out[i] = driver.Request{Ident: id}
	}
	return out
}

// Released counts a re-entered lock's instances down, and says when the
// one left is the inline holder the session was granted first.
func TestOwnReleased(t *testing.T) {
	var o Own
	x := driver.Ident{Kind: 1, NS: "a", Name: "x"}
	y := driver.Ident{Kind: 1, NS: "a", Name: "y"}
	o.Granted([]driver.Request{{Ident: x, Inline: true}}, driver.ModeWrite)
	o.Granted(grants(x), driver.ModeWrite)
	o.Granted(grants(x), driver.ModeRead)
	if o.Released(x, 1) {
		t.Fatal("two instances left, taken for the inline holder alone")
	}
	if !o.Released(x, 1) {
		t.Fatal("the inline holder alone left, not said")
	}
	if !o.Covers(x, driver.ModeWrite) {
		t.Fatal("the inline holder left is no longer covered")
	}
	if o.Released(x, 1) || o.Covers(x, driver.ModeRead) {
		t.Fatal("the last instance released, still counted")
	}
	// A first instance stored as a row: never the inline holder alone.
	o.Granted(grants(y), driver.ModeWrite)
	o.Granted([]driver.Request{{Ident: y, Inline: true}}, driver.ModeWrite)
	if o.Released(y, 1) {
		t.Fatal("a first instance stored as a row taken for an inline holder")
	}
	// A release that found nothing forgets the name.
	if o.Released(y, 0) || o.Covers(y, driver.ModeWrite) {
		t.Fatal("a release that found nothing left the hint")
	}
}
