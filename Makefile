# The targets a newcomer needs. PostgreSQL and MariaDB must be running for
# `make test` (see README.md); .ci/run starts them when they are down.

.PHONY: test test-sqlite demo build bench lint

# Every test on every backend, with the race detector.
test:
	go test -race -count=1 -timeout 15m ./...

# Only the embedded backend, for quick local work.
test-sqlite:
	BATON_TEST_BACKENDS=sqlite go test -race -count=1 ./...

# The guided tour on embedded SQLite.
demo:
	go run ./cmd/baton demo

build:
	go build -o baton ./cmd/baton

bench:
	go run ./cmd/baton bench locks --backend sqlite
	go run ./cmd/baton bench locks --backend postgres
	go run ./cmd/baton bench locks --backend mysql
	go run ./cmd/baton bench queue --backend sqlite
	go run ./cmd/baton bench queue --backend postgres
	go run ./cmd/baton bench queue --backend mysql
	cd bench/river && go run . --dsn postgres://postgres@127.0.0.1:5432/test

lint:
	gofmt -l . | (! grep .)
	go vet ./...
	go run honnef.co/go/tools/cmd/staticcheck@latest ./...
