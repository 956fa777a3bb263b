"""tests/test_numba.sh: checks kcache-inspect's JSON report of a numba unit (stdin), read as a
user would: the entry's dependencies with their stamps, numba's key fields, and the traced
misses explained by those fields. argv[1]: what to check (deps, cpu). Prints "ok", else why not."""
import json
import re
import sys

d = json.load(sys.stdin)
what = sys.argv[1]
live = d["overloads"]
misses = d["misses"]


def fields(item):
    return {f["name"]: f for f in item["fields"]}


if what == "deps":
    # the live overload lists both files with their stamps, as they are now (unchanged)
    f = fields(live[0])
    dep_paths = {f[n]["preview"].rsplit("/", 1)[-1] for n in f if f[n]["type"] == "file"}
    assert dep_paths == {"mod.py", "helper.py"}, dep_paths
    for n in f:
        if f[n]["type"] == "file":
            assert f[n]["stamp"]["size"] > 0 and f[n]["stamp"]["mtime_ns"] > 0, f[n]
            assert f[n]["now"]["checked"] and not f[n]["now"]["stale"], f[n]
    assert re.fullmatch(r"[0-9a-f]{64}", f["numba.bytecode_sha256"]["preview"]), f["numba.bytecode_sha256"]
    assert f["numba.signature"]["preview"] == "(int64,)", f["numba.signature"]
    # the miss after helper.py's edit says that helper.py changed, by content
    stamp = [m for m in misses if m["reason"] == "stamp"]
    assert stamp, [m["reason"] for m in misses]
    why = stamp[0]["explanation"]
    assert re.search(r"dep\.1 \([^)]*helper\.py\): [^;]*content", why), why
    assert "mod.py" not in why, why
elif what == "cpu":
    m = misses[0]  # newest first: the lookup under NUMBA_CPU_NAME=generic
    assert m["reason"] == "field", m["reason"]
    assert re.search(r'numba\.cpu_name: "[^"]+" \(stored\) vs "generic" \(now\)', m["explanation"]), m["explanation"]
    assert "numba.signature" not in m["explanation"], m["explanation"]
print("ok")
