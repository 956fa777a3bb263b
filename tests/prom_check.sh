#!/usr/bin/env bash
# prom_check.sh FILE - checks kcache-top --prometheus output against Prometheus's text exposition
# format (0.0.4) and DESIGN's metric names: every sample after its family's # HELP and # TYPE, the
# family declared once, counters ending in _total (gauges not), metric and label names well formed,
# label values quoted with only \\, \" and \n escapes, values numbers, each family's labels the
# ones DESIGN gives it, no series twice. Prints what is wrong; exits 1 then, 0 when all is well.
# python3 when present; else the line shapes with grep (the label grammar included).
set -u
f=$1
# family: type and its label names (DESIGN's "Metrics names", then what kcache-top adds in that style)
families='
kcache_hits_total counter tier
kcache_misses_total counter reason
kcache_puts_total counter -
kcache_evictions_total counter -
kcache_rejects_total counter -
kcache_builds_total counter -
kcache_build_waits_total counter -
kcache_remote_calls_total counter shard,node,result
kcache_remote_breaker_open gauge shard,node
kcache_store_bytes gauge -
kcache_store_limit_bytes gauge -
kcache_builds_claimed_elsewhere_total counter -
kcache_memory_evictions_total counter -
kcache_store_errors_total counter -
kcache_bytes_read_total counter -
kcache_bytes_written_total counter -
kcache_remote_lookups_total counter -
kcache_remote_puts_total counter -
kcache_remote_rejects_total counter -
kcache_remote_breaker_opens_total counter -
kcache_remote_call_seconds_total counter -
kcache_remote_breakers_open gauge -
kcache_remote_shard_lookups_total counter shard,node,result
kcache_remote_breaker_opened_timestamp_seconds gauge shard,node
kcache_store_entries gauge -
kcache_processes gauge -
kcache_stats_created_timestamp_seconds gauge -
kcache_stats_file_present gauge -
'
if command -v python3 >/dev/null; then
    exec python3 - "$f" "$families" <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
fam = {}
for l in sys.argv[2].strip().splitlines():
    n, t, labels = l.split()
    fam[n] = (t, [] if labels == "-" else labels.split(","))
name_re = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*$")
label_re = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')
bad = []
helped, typed, seen_sample, series = set(), {}, set(), set()
if text and not text.endswith("\n"): bad.append("no newline at the end")
if re.search(r"[\x00-\x09\x0b-\x1f\x7f]", text): bad.append("a control character in the text")
for i, l in enumerate(text.split("\n")[:-1], 1):
    if not l: continue
    m = re.match(r"# (HELP|TYPE) (\S+) (.+)$", l)
    if m:
        kind, n, rest = m.groups()
        if not name_re.match(n): bad.append("%d: bad name %s" % (i, n))
        if n in seen_sample: bad.append("%d: %s after its samples" % (i, kind))
        if kind == "HELP":
            if n in helped: bad.append("%d: HELP %s twice" % (i, n))
            helped.add(n)
        else:
            if n in typed: bad.append("%d: TYPE %s twice" % (i, n))
            if rest not in ("counter", "gauge"): bad.append("%d: type %s" % (i, rest))
            typed[n] = rest
        continue
    if l.startswith("#"): bad.append("%d: stray comment" % i); continue
    m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$", l)
    if not m: bad.append("%d: not a sample: %r" % (i, l)); continue
    n, _, labels, v = m.groups()
    seen_sample.add(n)
    if n not in helped or n not in typed: bad.append("%d: %s without HELP and TYPE before it" % (i, n))
    if n not in fam: bad.append("%d: %s is not a listed name" % (i, n)); continue
    t, want = fam[n]
    if typed.get(n) != t: bad.append("%d: %s is a %s, declared %s" % (i, n, t, typed.get(n)))
    if (t == "counter") != n.endswith("_total"): bad.append("%d: %s: counters and only counters end in _total" % (i, n))
    got = []
    if labels is not None:
        pos = 0
        while pos < len(labels):
            lm = label_re.match(labels, pos)
            if not lm: bad.append("%d: bad labels %r" % (i, labels)); break
            got.append(lm.group(1))
            pos = lm.end()
            if pos < len(labels):
                if labels[pos] != ",": bad.append("%d: bad labels %r" % (i, labels)); break
                pos += 1
    if got != want: bad.append("%d: %s has labels %s, want %s" % (i, n, got, want))
    try: float(v)
    except ValueError: bad.append("%d: value %r" % (i, v))
    key = (n, labels)
    if key in series: bad.append("%d: series twice: %s" % (i, l))
    series.add(key)
for n in typed:
    if n not in fam: bad.append("family %s is not a listed name" % n)
for b in bad[:20]: print(b)
sys.exit(1 if bad else 0)
PY
fi
# without python3: every line is a HELP, a TYPE or a sample of a listed family, declared before it
bad=0
names=$(awk 'NF {print $1}' <<<"$families")
while IFS= read -r l; do
    [ -z "$l" ] && continue
    case "$l" in
    '# HELP '*|'# TYPE '*)
        n=${l:7}; n=${n%% *}
        grep -qx -- "$n" <<<"$names" || { echo "not a listed name: $n"; bad=1; }
        eval "decl_${l:2:4}_$n=1" ;;
    *)
        if ! grep -qE '^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\[\\"n])*"(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\[\\"n])*")*\})? [-+0-9.eE]+$' <<<"$l"; then
            echo "not a sample: $l"; bad=1; continue
        fi
        n=${l%%[{ ]*}
        h=decl_HELP_$n t=decl_TYPE_$n
        [ -n "${!h:-}" ] && [ -n "${!t:-}" ] || { echo "$n without HELP and TYPE before it"; bad=1; } ;;
    esac
done <"$f"
exit $bad
