package drivertest

import (
	"testing"

	"github.com/batonhq/baton/driver"
)

func testSubscriptions(t *testing.T, d driver.Driver) {
	ctx := testCtx(t)
	tx := d.NoTx()
	s := driver.Subscription{Name: "orders", Table: "orders", SubscribedAs: "Orders", Actions: "IU", MaxAttempts: 4}
	must(t, tx.SubscriptionInsert(ctx, s))
	must(t, tx.SubscriptionInsert(ctx, driver.Subscription{Name: "audit", Table: "orders", Actions: "IUD", MaxAttempts: 1}))
	got, ok, err := tx.SubscriptionGet(ctx, "orders")
	must(t, err)
	want := s
	want.CreatedAt = got.CreatedAt
	failIf(t, !ok || got != want || got.CreatedAt.IsZero(), "SubscriptionGet = %+v %v, stored %+v", got, ok, s)
	get := func(name string) func() (bool, error) {
		return func() (bool, error) { _, ok, err := tx.SubscriptionGet(ctx, name); return ok, err }
	}
	del := func() (bool, error) { return tx.SubscriptionDelete(ctx, "orders") }
	l, _ := tx.SubscriptionList(ctx)
	failIf(t, len(l) != 2, "SubscriptionList = %+v", l)
	// Stored without SubscribedAs: the registry's name.
	failIf(t, l[0].Name != "audit" || l[0].SubscribedAs != "orders" || l[1].SubscribedAs != "Orders", "SubscriptionList = %+v", l)
	n, err := tx.SubscriptionCountTable(ctx, "orders")
	wantCount(t, "SubscriptionCountTable", n, err, 2)
	wantSteps(t,
		step{"SubscriptionGet of an unknown name", get("none"), false},
		step{"SubscriptionDelete", del, true},
		step{"a subscription deleted twice", del, false},
		step{"TableDescribe of a missing table", func() (bool, error) { _, ok, err := tx.TableDescribe(ctx, "no_such_table"); return ok, err }, false})
}
