package postgres_test

import (
	"testing"

	"github.com/batonhq/baton/driver/postgres"
	"github.com/batonhq/baton/internal/batontest"
)

// TestConformance runs the driver conformance suite on this backend (directly and through PgBouncer).
func TestConformance(t *testing.T) { batontest.Conformance(t, "postgres", postgres.Open) }
