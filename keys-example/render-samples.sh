#!/bin/sh
# Renders, with `apnsctl send --dry-run`, the HTTP/2 request of every sample payload listed in
# keys-example/payloads/manifest.tsv. Nothing is sent. Used by `make demo` until the local APNs
# server lands.
#
# usage: keys-example/render-samples.sh path/to/apnsctl
set -eu
apnsctl=${1:?usage: render-samples.sh path/to/apnsctl}
here=$(cd "$(dirname "$0")" && pwd)
token=$(grep -v '^#' "$here/tokens.txt" | head -n 1)
channel=dHJhY2tpbmctY2hhbm5lbC0x  # a sample broadcast channel id (base64)

# The test credentials (public test keys that Apple has never seen).
. "$here/ids.env"
export APNS_KEY_ID APNS_TEAM_ID
APNS_KEY_FILE="$here/$(basename "$APNS_KEY_FILE")"
export APNS_KEY_FILE

tail -n +2 "$here/payloads/manifest.tsv" | while IFS="$(printf '\t')" read -r file push_type priority topic destination; do
    echo "== $file ($push_type, $destination)"
    if [ "$destination" = broadcast ]; then
        set -- send --dry-run --channel-id "$channel" --topic "$topic" --push-type "$push_type" --payload "$here/payloads/$file"
    else
        set -- send --dry-run --token "$token" --topic "$topic" --push-type "$push_type" --payload "$here/payloads/$file"
    fi
    if [ "$priority" != - ]; then set -- "$@" --priority "$priority"; fi
    "$apnsctl" "$@"
    echo
done
