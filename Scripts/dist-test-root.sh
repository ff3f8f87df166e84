#!/usr/bin/env bash
# Runs inside a Debian root without Swift (Scripts/dist-test.sh copies it to /forge and starts it
# under chroot): installs one of make dist's files with apt, checks that nothing of the Swift
# toolchain is there, then uses apnsctl as a person would: --version, serve, send (one push and
# 1,000 tokens from a file), demo and doctor against the server. Loopback only.
#
#   dist-test-root.sh deb APNSCTL.deb VERSION_LINE
#   dist-test-root.sh tarball APNSCTL.tar.gz VERSION_LINE DEPENDS
#
# VERSION_LINE is what `apnsctl --version` must print; DEPENDS the .deb's Depends, which the
# tarball's user installs with `apt-get satisfy`.
set -euo pipefail

mode=$1 file=$2 expected=$3
export DEBIAN_FRONTEND=noninteractive
step() { echo "dist-test [$(. /etc/os-release && echo "$VERSION_CODENAME")]: $*"; }
fail() { echo "dist-test [$(. /etc/os-release && echo "$VERSION_CODENAME")]: FAILED: $*" >&2; exit 1; }

work=$(mktemp -d)
server_pid=""
stop_server() {
    # Only the server started here, by its id.
    if [ -n "$server_pid" ]; then kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    server_pid=""
}
trap 'stop_server; rm -rf "$work"' EXIT

# 1. Install, resolving the Depends from Debian's archive.
apt-get update -q >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; fail "apt-get update"; }
case $mode in
    deb)
        apt-get install -y -q --no-install-recommends "$file" >>"$work/apt.log" 2>&1 \
            || { cat "$work/apt.log" >&2; fail "apt-get install $file"; }
        apnsctl=/usr/bin/apnsctl
        for installed in /usr/share/man/man1/apnsctl.1.gz /usr/share/bash-completion/completions/apnsctl \
            /usr/share/zsh/site-functions/_apnsctl /usr/share/fish/vendor_completions.d/apnsctl.fish /usr/share/doc/apnsctl/copyright; do
            [ -f "$installed" ] || fail "the .deb did not install $installed"
        done
        ;;
    tarball)
        apt-get satisfy -y -q --no-install-recommends "$4" >>"$work/apt.log" 2>&1 \
            || { cat "$work/apt.log" >&2; fail "apt-get satisfy '$4'"; }
        tar -xzf "$file" -C /opt
        folder=$(basename "$file" .tar.gz)
        apnsctl=/opt/$folder/bin/apnsctl
        for installed in LICENSE README share/man/man1/apnsctl.1 share/bash-completion/completions/apnsctl \
            share/zsh/site-functions/_apnsctl share/fish/vendor_completions.d/apnsctl.fish; do
            [ -f "/opt/$folder/$installed" ] || fail "the tarball has no $folder/$installed"
        done
        ;;
    *) fail "unknown mode $mode" ;;
esac
step "installed $mode with apt: $(grep -c '^Setting up' "$work/apt.log") packages set up"

# 2. No part of the Swift toolchain is visible, and the binary links none.
[ ! -e /opt/swift ] || fail "/opt/swift exists in the root"
command -v swift >/dev/null && fail "a swift command is on PATH: $(command -v swift)"
found=$(find / -xdev \( -name 'libswift*' -o -name '*.swiftmodule' -o -name '*.swiftinterface' -o -name swift -o -name swiftc \
    -o -name swift_static -o -name 'libFoundation*' -o -name 'lib_Foundation*' -o -name 'libdispatch*' -o -name 'libBlocksRuntime*' \) \
    -print 2>/dev/null | head -n 5)
[ -z "$found" ] || fail "files of the Swift toolchain in the root: $found"
links=$(ldd "$apnsctl") || fail "ldd $apnsctl: $links"
grep -Eiq 'swift|Foundation|dispatch|not found' <<<"$links" && fail "ldd $apnsctl: $links"
step "no Swift in the root; apnsctl links $(awk '{print $1}' <<<"$links" | grep -v '^linux-vdso' | tr '\n' ' ')"

# 3. --version: the release and the commit.
printed=$("$apnsctl" --version)
[ "$printed" = "$expected" ] || fail "apnsctl --version printed '$printed', expected '$expected'"
step "apnsctl --version: $printed"

# 4. serve, its port read from the first line of its stdout (a FIFO: no polling, and an early
#    exit of the server is an end of file, not a wait).
keys=/forge/keys
topic=com.example.forgepush
mkfifo "$work/serve.out"
"$apnsctl" serve --port 0 --write-ca "$work/ca.pem" --register-key "$keys/AuthKey_FORGEKEY01.p8:FORGEKEY01:FORGETEAM1" \
    --topic "$topic" --quiet >"$work/serve.out" 2>"$work/serve.err" &
server_pid=$!
exec 3<"$work/serve.out"
read -r -t 60 -u 3 port || true
[[ "${port:-}" =~ ^[0-9]+$ ]] || fail "apnsctl serve printed no port: $(cat "$work/serve.err")"
[ -s "$work/ca.pem" ] || fail "apnsctl serve --write-ca wrote no CA"
step "apnsctl serve: port $port"

endpoint=(--url "https://127.0.0.1:$port" --ca-file "$work/ca.pem" --key-file "$keys/AuthKey_FORGEKEY01.p8"
    --key-id FORGEKEY01 --team-id FORGETEAM1 --topic "$topic")

# 5. send: one push, then 1,000 tokens from a file; NDJSON, one verdict per token and a summary.
token=$(printf 'ab%.0s' $(seq 32))
"$apnsctl" send "${endpoint[@]}" --token "$token" --title Hello --body "from a root without Swift" --format json \
    >"$work/one.ndjson" 2>"$work/one.err" || fail "send of one push: exit $?: $(cat "$work/one.err" "$work/one.ndjson")"
grep -q "\"token\":\"$token\".*\"status\":200" "$work/one.ndjson" || fail "send of one push: $(cat "$work/one.ndjson")"
step "apnsctl send: one push accepted"

for i in $(seq 1000); do printf '%064x\n' "$i"; done >"$work/tokens.txt"
"$apnsctl" send "${endpoint[@]}" --tokens-file "$work/tokens.txt" --title Hello --body "one of 1,000" --format json \
    >"$work/bulk.ndjson" 2>"$work/bulk.err" || fail "send of 1,000 tokens: exit $?: $(tail -n 5 "$work/bulk.err")"
verdicts=$(grep -c '"token":' "$work/bulk.ndjson" || true)
accepted=$(grep '"token":' "$work/bulk.ndjson" | grep -c '"status":200' || true)
[ "$verdicts" = 1000 ] && [ "$accepted" = 1000 ] \
    || fail "send of 1,000 tokens: $verdicts verdicts, $accepted accepted; last line: $(tail -n 1 "$work/bulk.ndjson")"
step "apnsctl send --tokens-file: 1000 verdicts, 1000 accepted"

# 6. doctor against the server, then the server stops cleanly on SIGTERM.
"$apnsctl" doctor "${endpoint[@]}" >"$work/doctor.out" 2>&1 || fail "doctor: exit $?: $(cat "$work/doctor.out")"
grep -q "all checks passed" "$work/doctor.out" || fail "doctor: $(cat "$work/doctor.out")"
step "apnsctl doctor: all checks passed"
kill -TERM "$server_pid"
status=0; wait "$server_pid" || status=$?
server_pid=""
[ "$status" = 0 ] || fail "apnsctl serve exited with $status after SIGTERM: $(cat "$work/serve.err")"

# 7. demo: client, local server and simulated device in one process.
"$apnsctl" demo >"$work/demo.out" 2>&1 || fail "demo: exit $?: $(tail -n 20 "$work/demo.out")"
step "apnsctl demo: $(grep -c . "$work/demo.out") lines, exit 0"

# 8. The release carries ICU's data for root and English only (Scripts/icu-data-filter.py): a
#    machine set to another language and time zone still gets the demo and its HTML timeline.
LANG=de_DE.UTF-8 LC_ALL=de_DE.UTF-8 TZ=Europe/Berlin "$apnsctl" demo --html "$work/timeline.html" >"$work/demo-de.out" 2>&1 \
    || fail "demo with LANG=de_DE.UTF-8 TZ=Europe/Berlin: exit $?: $(tail -n 20 "$work/demo-de.out")"
grep -q "all 14 checks passed" "$work/demo-de.out" || fail "demo with LANG=de_DE.UTF-8: $(tail -n 5 "$work/demo-de.out")"
grep -q "</html>" "$work/timeline.html" || fail "demo --html wrote no page: $(head -c 300 "$work/timeline.html")"
step "apnsctl demo --html with LANG=de_DE.UTF-8 TZ=Europe/Berlin: all checks passed, $(wc -c <"$work/timeline.html") bytes of HTML"
step "passed"
