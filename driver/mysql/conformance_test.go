package mysql_test

import (
	"testing"

	"github.com/batonhq/baton/driver/mysql"
	"github.com/batonhq/baton/internal/batontest"
)

// TestConformance runs the driver conformance suite on this backend.
func TestConformance(t *testing.T) { batontest.Conformance(t, "mysql", mysql.Open) }
