#!/usr/bin/env bash
# The PostgreSQL campaign benchmark: N `apnsctl campaign work` processes send M tokens to
# `apnsctl serve` on loopback through a private PostgreSQL cluster (Unix socket, default settings:
# fsync and synchronous_commit on), started in a temporary folder and removed at the end.
#
#   Scripts/campaign-bench.sh [--workers 4] [--tokens 1000000] [--batch-size 2048] [--latency 0ms] [--apnsctl PATH] [--shared-token]
#
# --shared-token: the workers send one provider token from the campaign database
# (`campaign work --shared-provider-token`) instead of signing one each.
#
# Prints the create (COPY) time, the send rate (tokens / wall time from the first worker's start to
# the last one's exit), the CPU the workers, `apnsctl serve` and PostgreSQL spent on the send (in
# all and per token), the database's growth per million tokens, and checks that every token has
# exactly one accepted verdict. Needs a release apnsctl (`swift build -c release --product apnsctl`)
# and Debian's postgresql (`make deps`); as root, PostgreSQL runs as the user postgres.
set -euo pipefail

workers=4 tokens=1000000 batch=2048 latency=0ms apnsctl="" shared=()
while [ $# -gt 0 ]; do
    case $1 in
        --shared-token) shared=(--shared-provider-token); shift; continue ;;
        --workers) workers=$2 ;;
        --tokens) tokens=$2 ;;
        --batch-size) batch=$2 ;;
        --latency) latency=$2 ;;
        --apnsctl) apnsctl=$2 ;;
        *) echo "usage: $0 [--workers N] [--tokens M] [--batch-size B] [--latency D] [--apnsctl PATH] [--shared-token]" >&2; exit 64 ;;
    esac
    shift 2
done
root=$(cd "$(dirname "$0")/.." && pwd)
[ -n "$apnsctl" ] || apnsctl="$(cd "$root" && swift build -c release --show-bin-path)/apnsctl"
[ -x "$apnsctl" ] || { echo "no apnsctl at $apnsctl: swift build -c release --product apnsctl" >&2; exit 66; }
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
[ -x "$bin/initdb" ] || { echo "no PostgreSQL in /usr/lib/postgresql/VERSION/bin: make deps" >&2; exit 69; }

folder=$(mktemp -d /tmp/campaign-bench.XXXXXX)
as_server=()
if [ "$(id -u)" = 0 ]; then
    chown postgres: "$folder"
    as_server=(runuser -u postgres --)
fi
serve_pid="" postgres_pid=""
cleanup() {
    [ -z "$serve_pid" ] || kill "$serve_pid" 2>/dev/null || true
    if [ -n "$postgres_pid" ]; then
        (cd "$folder" && "${as_server[@]}" "$bin/pg_ctl" stop -D "$folder/data" -m fast -w >/dev/null 2>&1) || true
    fi
    [ -z "${KEEP_POSTGRES_LOG:-}" ] || cp "$folder/postgres.log" "$KEEP_POSTGRES_LOG"
    rm -rf "$folder"
}
trap cleanup EXIT

cd "$folder"
"${as_server[@]}" "$bin/initdb" -D "$folder/data" -A trust -U forge -E UTF8 >/dev/null
# PG_OPTIONS: extra server settings to compare, e.g. PG_OPTIONS="-c synchronous_commit=off".
# shellcheck disable=SC2086
"${as_server[@]}" "$bin/postgres" -D "$folder/data" -k "$folder" -c listen_addresses= -p 5432 ${PG_OPTIONS:-} >"$folder/postgres.log" 2>&1 &
postgres_pid=$!
for _ in $(seq 1 600); do "$bin/pg_isready" -q -h "$folder" -p 5432 && break; sleep 0.05; done
url="postgres://forge@/postgres?host=$folder&port=5432"
psql() { "$bin/psql" -X -A -t -h "$folder" -p 5432 -U forge -d postgres -c "$1"; }

key="$root/keys-example/AuthKey_FORGEKEY01.p8"
"$apnsctl" serve --port 0 --quiet --latency "$latency" --register-key "$key:FORGEKEY01:FORGETEAM1" \
    --topic com.example.forgepush >"$folder/serve.out" 2>"$folder/serve.err" &
serve_pid=$!
for _ in $(seq 1 600); do [ -s "$folder/serve.out" ] && break; sleep 0.05; done
port=$(head -1 "$folder/serve.out")

python3 -c "import sys; sys.stdout.write(''.join('%064x\n' % i for i in range($tokens)))" >"$folder/tokens.txt"
echo '{"aps":{"alert":{"title":"Sale","body":"Everything must go"}}}' >"$folder/payload.json"
before=$(psql "SELECT pg_database_size(current_database())")

started=$(date +%s.%N)
"$apnsctl" campaign create --postgres "$url" --name bench --tokens-file "$folder/tokens.txt" --payload "$folder/payload.json" \
    --topic com.example.forgepush --batch-size "$batch"
created=$(date +%s.%N)

# CPU seconds (user + system) so far of a process and its children that were waited for (a
# backend's go to the postmaster), of the cluster's processes, and of this script's children.
cpu() { awk '{ printf "%.2f", ($14 + $15 + $16 + $17) / '"$(getconf CLK_TCK)"' }' "/proc/$1/stat"; }
# This cluster's: the postmaster's children, then the postmaster (with the children it reaped).
postmaster=$(head -1 "$folder/data/postmaster.pid")
postgres_cpu() {
    for p in $(pgrep -P "$postmaster") "$postmaster"; do cpu "$p" 2>/dev/null && echo; done | awk '{ s += $1 } END { printf "%.2f", s }'
}
# Once no client is connected: a backend that exits between pgrep and its read would be missed.
wait_for_backends() {
    for _ in $(seq 1 200); do pgrep -P "$postmaster" -f "^postgres: forge " >/dev/null || return 0; sleep 0.05; done
}
# The send's share: what the create (COPY, ANALYZE) and the tokens file cost is taken off.
wait_for_backends
postgres_before=$(postgres_cpu) serve_before=$(cpu "$serve_pid") script_before=$(cpu $$)

pids=()
for n in $(seq 1 "$workers"); do
    ${WORKER_PREFIX:-} "$apnsctl" campaign work --postgres "$url" --name bench --url "https://127.0.0.1:$port" --insecure-loopback \
        --key-file "$key" --key-id FORGEKEY01 --team-id FORGETEAM1 --owner "w$n" ${shared[@]+"${shared[@]}"} >"$folder/w$n.out" 2>"$folder/w$n.err" &
    pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
finished=$(date +%s.%N)
[ $failed = 0 ] || { echo "a worker failed:" >&2; cat "$folder"/w*.err >&2; exit 1; }

wait_for_backends
serve_cpu=$(awk "BEGIN { printf \"%.2f\", $(cpu "$serve_pid") - $serve_before }")
postgres_cpu=$(awk "BEGIN { printf \"%.2f\", $(postgres_cpu) - $postgres_before }")
workers_cpu=$(awk "BEGIN { printf \"%.2f\", $(cpu $$) - $script_before }")
per_token() { awk "BEGIN { printf \"%.1f\", $1 * 1e6 / $tokens }"; }
echo "send cpu seconds: workers $workers_cpu, apnsctl serve $serve_cpu, postgres $postgres_cpu (the machine: $(nproc) cores);" \
    "per token: workers $(per_token "$workers_cpu"), serve $(per_token "$serve_cpu"), postgres $(per_token "$postgres_cpu") µs"
if [ ${#shared[@]} -gt 0 ]; then
    echo "provider token: one shared by the workers ($(psql "SELECT count(*) FROM campaign_provider_tokens") row in campaign_provider_tokens)"
else
    echo "provider token: signed by each worker"
fi
counts=$(psql "SELECT count(*), count(*) FILTER (WHERE state = 'accepted'), count(*) FILTER (WHERE may_have_been_delivered) FROM campaign_tokens")
after=$(psql "SELECT pg_database_size(current_database())")
tables=$(psql "SELECT pg_total_relation_size('campaign_tokens') + pg_total_relation_size('campaign_batches')")
python3 - "$tokens" "$workers" "$started" "$created" "$finished" "$before" "$after" "$tables" "$counts" <<'EOF'
import sys
tokens, workers = int(sys.argv[1]), int(sys.argv[2])
started, created, finished = map(float, sys.argv[3:6])
before, after, tables = map(int, sys.argv[6:9])
rows, accepted, flagged = map(int, sys.argv[9].split("|"))
per_million = lambda size: size * 1e6 / tokens / 2**20
print(f"create (COPY, one transaction): {tokens} tokens in {created - started:.2f} s ({tokens / (created - started):,.0f} tokens/s)")
print(f"send: {workers} workers, {tokens} tokens in {finished - created:.2f} s: {tokens / (finished - created):,.0f} tokens/s")
print(f"database growth: {per_million(after - before):.1f} MiB per million tokens (tables and indexes {per_million(tables):.1f} MiB)")
print(f"verdicts: {rows} rows, {accepted} accepted, {flagged} flagged may_have_been_delivered")
sys.exit(0 if rows == tokens == accepted else 1)
EOF
