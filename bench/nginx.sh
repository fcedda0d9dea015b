#!/usr/bin/env bash
# The loopback upstream of scripts/bench's http workloads: Debian's nginx
# (nginx-light) serving the bench's page files, the cursor mapped to a
# file: /small/items is small/first.json, /small/items?cursor=p2 is
# small/p2.json (likewise for large).
#
#   bench/nginx.sh start DATA DIR   starts it (config, pid and logs in DIR), prints its port,
#                                   and writes DIR/http.config.json: DATA/config.json with
#                                   each collection's source made http://127.0.0.1:PORT/NAME/items
#   bench/nginx.sh stop DIR         stops it
set -euo pipefail

case "${1:-}" in
start)
    data=$(cd "$2" && pwd)
    dir=$3
    mkdir -p "$dir/tmp"
    dir=$(cd "$dir" && pwd)
    "$0" stop "$dir"
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    user_line=""
    if [[ $(id -u) == 0 ]]; then user_line="user root;"; fi
    sed -e "s|@USER@|$user_line|; s|@DIR@|$dir|g; s|@PORT@|$port|; s|@ROOT@|$data|" >"$dir/nginx.conf" <<'CONF'
@USER@
worker_processes 1;
pid @DIR@/nginx.pid;
error_log @DIR@/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 60s;
    default_type application/json;
    client_body_temp_path @DIR@/tmp/body;
    proxy_temp_path @DIR@/tmp/proxy;
    fastcgi_temp_path @DIR@/tmp/fastcgi;
    uwsgi_temp_path @DIR@/tmp/uwsgi;
    scgi_temp_path @DIR@/tmp/scgi;
    map $arg_cursor $page {
        ""                 first;
        "~^(?<p>p[0-9]+)$" $p;
        default            missing;
    }
    server {
        listen 127.0.0.1:@PORT@;
        root @ROOT@;
        location ~ ^/(?<workload>small|large)/items$ {
            try_files /$workload/$page.json =404;
        }
    }
}
CONF
    /usr/sbin/nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log"
    for _ in $(seq 50); do [[ -s "$dir/nginx.pid" ]] && break; sleep 0.1; done
    [[ -s "$dir/nginx.pid" ]] || { echo "nginx.sh: nginx did not start (see $dir/error.log)" >&2; exit 1; }
    python3 - "$data/config.json" "$dir/http.config.json" "$port" <<'PY'
import json, sys
source, target, port = sys.argv[1], sys.argv[2], sys.argv[3]
with open(source) as f:
    config = json.load(f)
for name, collection in config["collections"].items():
    collection["source"] = {"type": "http", "url": "http://127.0.0.1:%s/%s/items" % (port, name)}
with open(target, "w") as f:
    json.dump(config, f, indent=2)
PY
    echo "$port"
    ;;
stop)
    dir=$2
    if [[ -s "$dir/nginx.pid" ]]; then
        kill "$(cat "$dir/nginx.pid")" 2>/dev/null || true
        for _ in $(seq 50); do [[ -f "$dir/nginx.pid" ]] || break; sleep 0.1; done
    fi
    ;;
*)
    echo "usage: bench/nginx.sh start DATA DIR | stop DIR" >&2
    exit 64
    ;;
esac
