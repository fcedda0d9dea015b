#!/usr/bin/env bash
# Pages through a collection with one long-running nextpage, driven from
# bash as a coprocess: a request goes to its stdin, the reply is read from
# its stdout, one line each. Prints every item as one line of JSON.
#
#   scripts/examples/coproc.sh [COLLECTION [NEXTPAGE-ARGUMENTS...]]
#
# With no nextpage.json in the current folder nextpage serves its built-in
# `demo` collection (250 items): run it from an empty folder to see them.
# The nextpage binary is $NEXTPAGE, else `nextpage` on the PATH. Needs jq.
set -euo pipefail
collection=${1:-demo}
shift || true
bin=${NEXTPAGE:-nextpage}

coproc NP { exec "$bin" --log-level warning "$@"; }
# Copies: bash unsets NP and NP_PID once the coprocess has ended.
server_pid=$NP_PID
to_server=${NP[1]}
from_server=${NP[0]}

next_id=0
# call METHOD PARAMS-JSON: sends one request and sets $result to its result.
call() {
  next_id=$((next_id + 1))
  jq -cn --argjson id "$next_id" --arg method "$1" --argjson params "$2" \
    '{jsonrpc: "2.0", id: $id, method: $method, params: $params}' >&"$to_server"
  local reply
  while IFS= read -r reply <&"$from_server"; do
    # Skip notifications; take the reply with our id.
    [ "$(jq -r '.id // empty' <<<"$reply")" = "$next_id" ] && break
  done
  if jq -e 'has("error")' <<<"$reply" >/dev/null; then
    echo "nextpage: $(jq -c .error <<<"$reply")" >&2
    exit 1
  fi
  result=$(jq -c .result <<<"$reply")
}

params=$(jq -cn --arg c "$collection" '{collection: $c}')
while :; do
  call loadNext "$params"
  jq -c '.items[]' <<<"$result"
  [ "$(jq -r .hasNext <<<"$result")" = true ] || break
done
call status "$params"
echo "$(jq -r '"\(.collection): \(.count) items in \(.pages) pages"' <<<"$result")" >&2

# End of input: nextpage answers what is in flight and exits 0.
exec {to_server}>&-
wait "$server_pid"
