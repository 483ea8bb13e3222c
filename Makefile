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
# VERSION defaults to the tag the checkout is at or after (v0.1.0 on the
# tag, v0.1.0-3-gabcdef0 three commits later, -dirty with changes), and is
# what `baton version` prints. Without a tag none is linked in, and the
# binary reports the version Go stamps from the checkout (as `go install
# ...@v0.1.0` reports v0.1.0); the files are named "dev".
VERSION ?= $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null)
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
release:
	rm -rf dist && mkdir -p dist
	set -e; for p in $(PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; ext=; [ $$os = windows ] && ext=.exe; \
	  out=dist/baton_$(or $(VERSION),dev)_$${os}_$${arch}$$ext; \
	  echo "build $$out"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath \
	    -ldflags "-s -w $(if $(VERSION),-X main.version=$(VERSION))" -o $$out ./cmd/baton; \
	done
	cd dist && sha256sum baton_* > SHA256SUMS

# What CI builds of the release: two platforms, checked to be static.
release-check:
	$(MAKE) release PLATFORMS="linux/amd64 darwin/arm64"
	go version -m dist/baton_*_linux_amd64 | grep -q "CGO_ENABLED=0"
	go version -m dist/baton_*_darwin_arm64 | grep -q "GOARCH=arm64"
	test -z "$(VERSION)" || dist/baton_$(VERSION)_linux_amd64 version | head -1 | grep -qx "baton $(VERSION)"

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
