# The targets a newcomer needs. PostgreSQL and MariaDB must be running for
# `make test` (see README.md); .ci/run starts them when they are down.

.PHONY: test test-sqlite demo build bench lint release release-check

# Every test on every backend, with the race detector.
test:
	go test -race -count=1 -timeout 25m ./...

# Only the embedded backend, for quick local work.
test-sqlite:
	BATON_TEST_BACKENDS=sqlite go test -race -count=1 ./...

# The guided tour on embedded SQLite.
demo:
	go run ./cmd/baton demo

build:
	go build -o baton ./cmd/baton

# Release binaries: static (CGO_ENABLED=0), reproducible paths (-trimpath),
# stripped, for every platform below, into dist/ with SHA-256 sums.
# VERSION defaults to the latest tag (or a commit), and is what
# `baton version` prints.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
release:
	rm -rf dist && mkdir -p dist
	set -e; for p in $(PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; ext=; [ $$os = windows ] && ext=.exe; \
	  out=dist/baton_$(VERSION)_$${os}_$${arch}$$ext; \
	  echo "build $$out"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath \
	    -ldflags "-s -w -X main.version=$(VERSION)" -o $$out ./cmd/baton; \
	done
	cd dist && sha256sum baton_* > SHA256SUMS

# What CI builds of the release: two platforms, checked to be static.
release-check:
	$(MAKE) release PLATFORMS="linux/amd64 darwin/arm64"
	go version -m dist/baton_*_linux_amd64 | grep -q "CGO_ENABLED=0"
	go version -m dist/baton_*_darwin_arm64 | grep -q "GOARCH=arm64"

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
	go mod tidy -diff
	go run honnef.co/go/tools/cmd/staticcheck@latest ./...
