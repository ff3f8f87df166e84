# ForgePush: the commands a newcomer and CI type. `make demo` and `make test` install what is
# missing first, so a fresh Debian machine with Swift needs nothing else.

SWIFT        ?= swift
SWIFT_FLAGS  ?=
# Debian packages the build, the tests and the demo need. Installed only when missing. tinyproxy
# (HTTP CONNECT) and microsocks (SOCKS5) are the real proxies the proxy tests start; chromium
# (headless) renders the demo's HTML timeline and groff-base the installed man page in their tests.
# postgresql: the campaign tests start a private cluster (initdb, postgres) in a temporary folder;
# no system service is used.
BUILD_APT_PACKAGES := libnghttp2-dev libssl-dev libsqlite3-dev pkg-config
APT_PACKAGES := $(BUILD_APT_PACKAGES) openssl nghttp2-client nghttp2-server curl python3 python3-venv tinyproxy microsocks \
                chromium groff-base postgresql
# make dist and make dist-test only (not make test): see dist-deps.
DIST_APT_PACKAGES := dpkg binutils debootstrap python3
SUDO         := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# The fault-oracle tests run a Python HTTP/2 server (Tests/FaultServer/fault_server.py) that is not
# ForgePush's code. Its two packages come from PyPI into a venv (.build-*/ is ignored by git), with
# openapi-schema-validator, which checks the Live Activity gateway's answers against its OpenAPI document;
# Debian's python3 needs python3-venv for `-m venv`. The tests find the venv's python through
# FORGE_TEST_PYTHON (else .build-venv/bin/python) and fail, not skip, without it.
PYTHON       ?= python3
VENV         := .build-venv
PY_PACKAGES  := h2==4.4.1 cryptography==50.0.2 openapi-schema-validator==0.9.0
export FORGE_TEST_PYTHON := $(CURDIR)/$(VENV)/bin/python

# The apnsctl tests wait for child processes (the built binary, apnsctl serve) on their threads; in
# the same process as the library's tests they would hold the 2-core machine's cooperative threads
# and stall in-flight pushes past their deadlines. They run in a second test process.
SKIP_CLI     := --skip APNSCtlTests --skip ReadmePackageTests
ONLY_CLI     := --filter APNSCtlTests
# The README's and the DocC articles' snippets are built by `swift build` in a package of their own
# (.build-readme/, its scratch folder kept between runs), which is the test that they compile as a
# user pastes them. That build would take the 2 cores from the library's timing-sensitive tests: a
# third test process.
ONLY_README  := --filter ReadmePackageTests

# `make install`: where (DESTDIR for packagers), and which build: release unless CONFIGURATION=debug
# (the tests install the debug build they already have, through Scripts/install.sh).
PREFIX        ?= /usr/local
DESTDIR       ?=
CONFIGURATION ?= release
# swift-argument-parser's generate-manual plugin writes the man page here, in the build folder
# (<scratch>/<triple>/<configuration> is the bin path), whatever the configuration.
MANUAL        = $$(dirname "$$(dirname "$$($(SWIFT) build --show-bin-path $(SWIFT_FLAGS))")")/plugins/GenerateManual/outputs/apnsctl/apnsctl.1

.PHONY: all deps build-deps dist-deps pydeps build release test example demo docs api sanitize fuzz bench soak lint clean manual install uninstall dist dist-test

all: build

## deps: install the missing Debian packages (one `apt-get update`, then only what is missing).
## postgresql counts as present when a server's programs are (any version, off PATH in
## /usr/lib/postgresql/VERSION/bin) and the user `postgres` they run as when the tests are root:
## the `postgresql` metapackage itself need not be installed.
define apt-install
	@missing=""; \
	for p in $(1); do \
	  case $$p in \
	    postgresql) \
	      ls /usr/lib/postgresql/*/bin/initdb /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 && id postgres >/dev/null 2>&1 \
	        || missing="$$missing $$p";; \
	    *) dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p";; \
	  esac; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "$@: installing$$missing"; \
	  $(SUDO) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $$missing; \
	else \
	  echo "$@: all present ($(strip $(1)))"; \
	fi
endef
deps:
	$(call apt-install,$(APT_PACKAGES))

## build-deps: only what building needs (make manual, make install and make dist need no test tools).
build-deps:
	$(call apt-install,$(BUILD_APT_PACKAGES))

## dist-deps: what make dist and make dist-test need besides the build: dpkg-deb (dpkg) and strip and
## readelf (binutils) to package, python3 to reduce ICU's data (Scripts/icu-data-filter.py), debootstrap to make the Debian roots.
dist-deps:
	$(call apt-install,$(BUILD_APT_PACKAGES) $(DIST_APT_PACKAGES))

## pydeps: the fault server's Python packages in $(VENV)/ (created, and pip run, only when an import fails).
pydeps: deps
	@if $(VENV)/bin/python -c 'import h2, cryptography, openapi_schema_validator' 2>/dev/null; then \
	  echo "pydeps: $(VENV) has h2, cryptography and openapi-schema-validator"; \
	else \
	  echo "pydeps: installing $(PY_PACKAGES) into $(VENV)"; \
	  $(PYTHON) -m venv $(VENV) && \
	  $(VENV)/bin/python -m pip install -q --disable-pip-version-check $(PY_PACKAGES) && \
	  $(VENV)/bin/python -c 'import h2, cryptography, openapi_schema_validator'; \
	fi

build: deps
	$(SWIFT) build $(SWIFT_FLAGS)

release: deps
	$(SWIFT) build -c release $(SWIFT_FLAGS)

## test: every test (unit, crypto against the openssl tool, apnsctl binary tests, the fault oracle),
## then `make example`.
test: deps pydeps
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	$(MAKE) --no-print-directory manual CONFIGURATION=debug
	$(SWIFT) test --skip-build $(SKIP_CLI) $(SWIFT_FLAGS)
	$(SWIFT) test --skip-build $(ONLY_CLI) $(SWIFT_FLAGS)
	$(SWIFT) test --skip-build $(ONLY_README) $(SWIFT_FLAGS)
	$(MAKE) --no-print-directory example

## example: builds Examples/HummingbirdPush (a Hummingbird 2 app sending through ForgeAPNs; its own
## package, built in $(EXAMPLE_BUILD)/ so reruns are incremental) and runs requests through it
## against `apnsctl serve`: one accepted, one rejected, then /metrics (Examples/HummingbirdPush/check.sh).
EXAMPLE_DIR   := Examples/HummingbirdPush
EXAMPLE_BUILD := $(CURDIR)/.build-example
example: deps
	$(SWIFT) build --product apnsctl $(SWIFT_FLAGS)
	$(SWIFT) build --package-path $(EXAMPLE_DIR) --scratch-path $(EXAMPLE_BUILD) $(SWIFT_FLAGS)
	$(EXAMPLE_DIR)/check.sh "$$($(SWIFT) build --show-bin-path $(SWIFT_FLAGS))/apnsctl" \
	  "$$($(SWIFT) build --package-path $(EXAMPLE_DIR) --scratch-path $(EXAMPLE_BUILD) --show-bin-path $(SWIFT_FLAGS))/HummingbirdPush"

## demo: `apnsctl demo`: client, local APNs server (TLS on loopback) and a simulated device in one
## process; prints a checked timeline and a 10,000-token bulk summary. No Apple account, no network.
## `make demo DEMO_FLAGS=--serve` then keeps the demo's inbox page open (its address printed) until Ctrl-C.
DEMO_FLAGS ?=
demo: deps
	$(SWIFT) build --product apnsctl $(SWIFT_FLAGS)
	"$$($(SWIFT) build --show-bin-path $(SWIFT_FLAGS))/apnsctl" demo $(DEMO_FLAGS)

## docs: the DocC documentation of the libraries in DOCS_TARGETS (their catalogs in
## Sources/<target>/<target>.docc) by swift-docc-plugin, with DocC's warnings as errors: a symbol or article
## link that does not resolve, or an undocumented parameter, fails. The archives are written to
## .build/plugins/Swift-DocC/outputs/<target>.doccarchive. Offline; building needs only the build's packages.
DOCS_TARGETS := ForgeAPNs ForgeLoopback ForgeCampaign ForgeLiveActivities ForgeLiveActivitiesGateway
docs: build-deps
	$(SWIFT) package $(SWIFT_FLAGS) --disable-sandbox generate-documentation $(addprefix --target ,$(DOCS_TARGETS)) --warnings-as-errors

## api: the library products' public symbols (Swift's symbol graphs, counted by Scripts/public-symbols.py)
## against their listing, docs/public-api.symbols: a symbol added or removed fails, named, until the
## listing is rewritten (`Scripts/public-symbols.py --write docs/public-api.symbols`) in the same change.
api: build-deps
	@folder=$$($(SWIFT) package $(SWIFT_FLAGS) dump-symbol-graph --minimum-access-level public | sed -n 's/^Files written to //p') && \
	  test -n "$$folder" && $(PYTHON) Scripts/public-symbols.py --check docs/public-api.symbols "$$folder"

## soak: apnsctl serve (inbox, phones, two event-stream clients) under a steady SOAK_RATE pushes/s for
## SOAK_MINUTES, then apnsctl send of SOAK_TOKENS tokens to serve --latency 30ms; fails when memory grows
## more than 10 % after minute 5, or descriptors or threads grow (Scripts/soak.py). CSVs and a plot of
## RSS go to SOAK_OUTPUT. Not in CI: about an hour.
SOAK_MINUTES ?= 30
SOAK_RATE    ?= 5000
SOAK_TOKENS  ?= 10000000
SOAK_OUTPUT  ?= $(CURDIR)/.build-soak
soak: deps pydeps
	@$(VENV)/bin/python -c 'import matplotlib' 2>/dev/null || $(VENV)/bin/python -m pip install -q --disable-pip-version-check matplotlib==3.11.2
	$(SWIFT) build -c release --product apnsctl $(SWIFT_FLAGS)
	$(VENV)/bin/python Scripts/soak.py "$$($(SWIFT) build -c release --show-bin-path $(SWIFT_FLAGS))/apnsctl" "$(SOAK_OUTPUT)" \
	  --minutes $(SOAK_MINUTES) --rate $(SOAK_RATE) --tokens $(SOAK_TOKENS)

## sanitize: the tests under AddressSanitizer (release: a debug build hides what the optimiser exposes) and ThreadSanitizer;
## the reconnect tests also under LeakSanitizer (connections made and lost must leave nothing behind).
sanitize: deps pydeps
	$(MAKE) --no-print-directory manual CONFIGURATION=debug
	ASAN_OPTIONS=detect_leaks=0 $(SWIFT) test -c release --sanitize=address --scratch-path .build-asan $(SKIP_CLI) $(SWIFT_FLAGS)
	ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/Tests/lsan-suppressions.txt $(SWIFT) test -c release --sanitize=address --scratch-path .build-asan --filter ReconnectTests $(SWIFT_FLAGS)
	ASAN_OPTIONS=detect_leaks=0 $(SWIFT) test -c release --sanitize=address --scratch-path .build-asan $(ONLY_CLI) $(SWIFT_FLAGS)
	$(SWIFT) test --sanitize=thread --scratch-path .build-tsan $(SKIP_CLI) $(SWIFT_FLAGS)
	$(SWIFT) test --sanitize=thread --scratch-path .build-tsan $(ONLY_CLI) $(SWIFT_FLAGS)

## fuzz: every parser of outside bytes under libFuzzer and AddressSanitizer (Scripts/fuzz.sh): JSON payloads, .apns
## files, tokens-file lines, provider tokens, identifiers, inbox API requests, and the HTTP/2 server's input. Each
## target runs FUZZ_SECONDS over its seeds (Fuzz/Corpus/); a crash, a leak or an input over 1 s fails, its file named.
## Exits 69 when the toolchain has no libFuzzer. `make fuzz FUZZ_SECONDS=20 FUZZ_TARGETS=FuzzHTTP2Server`.
FUZZ_SECONDS ?= 300
FUZZ_TARGETS ?=
fuzz: build-deps
	FUZZ_SECONDS=$(FUZZ_SECONDS) SWIFT="$(SWIFT)" Scripts/fuzz.sh $(FUZZ_TARGETS)

## bench: the benchmark executable in release mode (see `apns-bench --help`).
bench: deps
	$(SWIFT) build -c release --product apns-bench $(SWIFT_FLAGS)
	"$$($(SWIFT) build -c release --show-bin-path $(SWIFT_FLAGS))/apns-bench" encode
	"$$($(SWIFT) build -c release --show-bin-path $(SWIFT_FLAGS))/apns-bench" transport --requests 100000 --in-flight 100 --h2load

## manual: apnsctl's man page (.build/plugins/GenerateManual/outputs/apnsctl/apnsctl.1) by swift-argument-parser's generate-manual plugin, which
## builds the package's products in $(CONFIGURATION) and runs `apnsctl --experimental-dump-help`. Offline.
manual: build-deps
	$(SWIFT) package $(SWIFT_FLAGS) plugin generate-manual --configuration $(CONFIGURATION)

## install: apnsctl ($(CONFIGURATION) build) in $(DESTDIR)$(PREFIX)/bin, its man page in share/man/man1,
## bash, zsh and fish completions where those shells look under share/. `make install PREFIX=$$HOME/.local`.
install: manual
	$(SWIFT) build -c $(CONFIGURATION) --product apnsctl $(SWIFT_FLAGS)
	Scripts/install.sh "$(DESTDIR)$(PREFIX)" "$$($(SWIFT) build -c $(CONFIGURATION) --show-bin-path $(SWIFT_FLAGS))/apnsctl" "$(MANUAL)"

## uninstall: removes what `make install` installed under $(DESTDIR)$(PREFIX).
uninstall:
	Scripts/install.sh --uninstall "$(DESTDIR)$(PREFIX)"

## dist: apnsctl for machines without Swift, built from HEAD's files (Scripts/dist.sh): release,
## Swift runtime and Foundation linked statically, stripped; dist/apnsctl-VERSION-linux-ARCH.tar.gz
## and dist/apnsctl_VERSION_ARCH.deb. `apnsctl --version` names the commit.
dist: dist-deps
	SWIFT="$(SWIFT)" Scripts/dist.sh

## dist-test: the two dist files in Debian roots without Swift (Scripts/dist-test.sh): the .deb installed
## by apt in bookworm, the tarball in trixie; each runs --version, serve, send (1 and 1,000 tokens),
## demo and doctor. The roots are cached in $(ROOTFS_CACHE). Root only. Then every CLI test runs
## against the release binary (FORGE_APNSCTL), static and with ICU's reduced data, as it ships.
ROOTFS_CACHE ?= /var/cache/forgepush-rootfs
dist-test: dist pydeps
	ROOTFS_CACHE="$(ROOTFS_CACHE)" Scripts/dist-test.sh dist
	$(MAKE) --no-print-directory manual CONFIGURATION=debug
	@release=$$(mktemp -d) && trap 'rm -rf "$$release"' EXIT && \
	  tar -xzf dist/apnsctl-*-linux-$$(uname -m).tar.gz -C "$$release" && \
	  FORGE_APNSCTL=$$(echo "$$release"/apnsctl-*/bin/apnsctl) $(SWIFT) test $(ONLY_CLI) $(SWIFT_FLAGS)

clean:
	rm -rf .build .build-asan .build-tsan .build-fuzz .build-readme .build-example .build-dist dist $(VENV)
