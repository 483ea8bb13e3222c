package postgres

import (
	"context"
	"errors"

	"github.com/batonhq/baton/driver"
)

func Open(ctx context.Context, dsn, prefix string) (driver.Driver, error) { return nil, errors.New("todo") }
