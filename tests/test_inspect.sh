#!/usr/bin/env bash
# test_inspect.sh - checks kcache-inspect's numba mode against real numba cache files and
# against what real numba does with them.
#
# Usage: tests/test_inspect.sh [TOOL]          (default: build/kcache-inspect)
# Prints one line per check, "ok NAME" or "FAIL NAME: why" (the tests/kt.h protocol), "skip
# NAME: why" on stderr for what cannot run here, and exits non-zero when any check failed.
#
# Reads only the clone: tests/data/numba-shared (numba 0.56.4 caches made on a znver3),
# tests/data/numba-corpus (numba 0.56.4, 0.60.0, 0.68.1: every case with numba's own behaviour
# recorded beside it, tests/numba_cases.py), tests/data/nbi-h100, tests/data/nbi-regress.
# Needs: python3; /usr/bin/python3 with Debian's python3-numba (numba 0.56, LLVM 14), whose
# absence is a FAIL; build/venv-numba (PyPI's newest numba, scripts/numba-venv.sh, made here
# when missing): when PyPI cannot be reached, one skip line says so and the rest runs.
# qemu-x86_64-static (Debian: qemu-user-static) for the CPU names under made-up CPUIDs.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tool=${1:-$root/build/kcache-inspect}
case "$tool" in /*) ;; *) tool=$PWD/$tool ;; esac
failures=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kcache-inspect-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
unset NUMBA_CPU_NAME NUMBA_CPU_FEATURES PYTHONPYCACHEPREFIX

ok() { echo "ok $1"; }
fail() { echo "FAIL $1: $2"; failures=$((failures + 1)); }

# run NAME ARGS...: runs the tool; sets $out, $err, $rc; a signal or sanitizer report fails NAME
run() {
    local name=$1; shift
    "$tool" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out"); err=$(cat "$tmp/err")
    if [ "$rc" -ge 128 ] || grep -q -E 'AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer' "$tmp/err"; then
        fail "$name" "crashed (status $rc): $(head -c 300 "$tmp/err")"
        return 1
    fi
    return 0
}
skip() { echo "skip $1: $2" >&2; }
# has NAME PATTERN: $out contains the fixed string PATTERN
has() { if grep -q -F -- "$2" <<<"$out"; then return 0; fi; fail "$1" "output lacks '$2'"; return 1; }
# verdict NAME CODE: --json's verdict.code is CODE (and the JSON parses)
json_get() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$tmp/out" "$1" 2>/dev/null; }

if [ ! -x "$tool" ]; then
    fail tool_exists "$tool is not an executable (build it first)"
    exit 1
fi

# ----------------------------------------------------------------------------------------------
# the shared corpus (numba 0.56.4 caches in a NUMBA_CACHE_DIR, made on a znver3): a copy, its
# mtimes put back from MANIFEST.json (git keeps none)
corpus=$root/tests/data/numba-shared
cp -R "$corpus" "$tmp/corpus" && chmod -R u+w "$tmp/corpus"
restored=1
while read -r case src ns; do
    touch -d "@${ns:0:${#ns}-9}.${ns: -9}" "$tmp/corpus/$case/$src" || restored=0
done < <(python3 -c 'import json,sys
for k, v in json.load(open(sys.argv[1])).items(): print(k, v["source"], v["source_mtime_ns"])' "$corpus/MANIFEST.json")
[ "$restored" = 1 ] && ok corpus_mtimes_restored || fail corpus_mtimes_restored "touch failed"
idx() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]]["index"])' "$corpus/MANIFEST.json" "$1"; }
# copied, the cache subdirectories (PARENT_SHA1-OF-THE-SOURCE-DIR) name another path: numba never
# reads them there
simple=$tmp/corpus/simple/$(idx simple)
if run corpus_moved --json "$simple"; then
    v=$(json_get '(d["verdict"]["code"], d["source"]["found_by"].startswith("NUMBA_CACHE_DIR layout, by directory name"), d["source"]["numba_reads_this_index"], d["source"]["path"].endswith("/simple/mod.py"))')
    [ "$v" = "('never-read', True, False, True)" ] && ok corpus_moved || fail corpus_moved "got $v"
fi
if run corpus_moved_text "$simple"; then
    has corpus_moved_text "NEVER READ: this cache subdirectory was made for a source in" &&
        has corpus_moved_text "verdict    numba never reads this index:" && ok corpus_moved_text
fi
# renamed for where the sources are now (as a user moving a NUMBA_CACHE_DIR tree would), numba reads them
rehome() { # INDEX: the name its PARENT_SHA1 directory has for the case's directory now
    python3 -c 'import hashlib,os,sys
d = os.path.dirname(sys.argv[1]); c = os.path.abspath(os.path.dirname(os.path.dirname(d)))
print(os.path.join(os.path.dirname(d), os.path.basename(c) + "_" + hashlib.sha1(c.encode()).hexdigest()))' "$1"
}
for c in simple twocpu stale; do
    f=$tmp/corpus/$c/$(idx $c)
    mv "${f%/*}" "$(rehome "$f")"
done
simple=$(ls "$tmp"/corpus/simple/cache/*/*.nbi); twocpu=$(ls "$tmp"/corpus/twocpu/cache/*/*.nbi); stale=$(ls "$tmp"/corpus/stale/cache/*/*.nbi)
# numba made them with NUMBA_CACHE_DIR set to each case's cache/: without it, numba opens the in-tree index
if run corpus_no_cache_dir --json "$simple"; then
    v=$(json_get '(d["verdict"]["code"], d["source"]["locator"], d["source"]["numba_opens"].endswith("/simple/__pycache__/" + d["file"].rsplit("/", 1)[1]))')
    [ "$v" = "('never-read', 'InTreeCacheLocator', True)" ] && ok corpus_no_cache_dir || fail corpus_no_cache_dir "got $v"
fi
export NUMBA_CACHE_DIR=$tmp/corpus/simple/cache

# the first overload's CPU and features: the machine that made the corpus (a znver3)
run corpus_features --json "$simple" && zfeat=$(json_get 'd["overloads"][0]["features"]')
zcpu=$(json_get 'd["overloads"][0]["cpu"]')
[ "$zcpu" = znver3 ] && [ -n "$zfeat" ] && ok corpus_features || fail corpus_features "cpu '$zcpu'"

# simple: hit for all three overloads with their three signatures
if run corpus_simple --cpu znver3 --features "$zfeat" "$simple"; then
    has corpus_simple "numba      0.56.4" && has corpus_simple "(int64, int64)" &&
    has corpus_simple "(float64, float64)" && has corpus_simple "(array(int64, 1d, C), array(int64, 1d, C))" &&
    has corpus_simple "found by: NUMBA_CACHE_DIR layout: the directory hash matches" &&
    has corpus_simple "check    match" && has corpus_simple "verdict    hit: 3 of 3 overloads usable on this CPU (znver3)" &&
    [ "$rc" = 0 ] && ok corpus_simple
fi
# detected: the name numba 0.56's LLVM gives this machine; the index's target triple says it is
# Debian's build (LLVM 14), so it must be what Debian's llvmlite says here
if run corpus_simple_detected --json "$simple"; then
    v=$(json_get '(d["host"]["cpu_from"], d["host"]["numba_llvm"]["llvm"], d["host"]["numba_llvm"]["llvm_used"])')
    [ "$v" = "('detected', [11, 14], 14)" ] && ok corpus_simple_detected || fail corpus_simple_detected "got $v"
    deb_cpu=$(/usr/bin/python3 -c 'import llvmlite.binding as ll; print(ll.get_host_cpu_name())' 2>/dev/null)
    v=$(json_get 'd["host"]["cpu"]')
    if [ -z "$deb_cpu" ]; then fail corpus_simple_detected_as_llvm14 "Debian's llvmlite is missing (apt-get install python3-numba)"
    elif [ "$v" = "$deb_cpu" ]; then ok "corpus_simple_detected_as_llvm14_$v"
    else fail corpus_simple_detected_as_llvm14 "kcache-inspect says LLVM 14 calls this CPU $v, Debian's llvmlite says $deb_cpu"; fi
fi
if run corpus_llvm_version --json --llvm-version 11 "$simple"; then
    v=$(json_get '(d["host"]["numba_llvm"]["llvm"], d["host"]["cpu"] == d["host"]["numba_llvm"]["names"][0])')
    [ "$v" = "([11], True)" ] && ok corpus_llvm_version || fail corpus_llvm_version "got $v"
fi
if run corpus_simple_json --json --cpu znver3 --features "$zfeat" "$simple"; then
    v=$(json_get '(d["verdict"]["code"], d["verdict"]["usable"], d["stamp"]["matches"], [o["signature"] for o in d["overloads"]])')
    [ "$v" = "('hit', 3, True, ['(int64, int64)', '(float64, float64)', '(array(int64, 1d, C), array(int64, 1d, C))'])" ] &&
        ok corpus_simple_json || fail corpus_simple_json "got $v"
fi

# twocpu: two overloads differing only in CPU name and features; the default CPU uses the first
export NUMBA_CACHE_DIR=$tmp/corpus/twocpu/cache
if run corpus_twocpu --cpu znver3 --features "$zfeat" "$twocpu"; then
    has corpus_twocpu "same signature as [1]; differs only in: CPU name, CPU features" &&
    has corpus_twocpu "cpu       znver3  (matches this CPU)" && has corpus_twocpu "cpu       generic  (not this CPU)" &&
    has corpus_twocpu "verdict    hit: 1 of 2 overloads usable on this CPU (znver3): [1];" && ok corpus_twocpu
fi
if run corpus_twocpu_json --json --cpu znver3 --features "$zfeat" "$twocpu"; then
    v=$(json_get '([(o["signature"], o["cpu"], o["usable"]) for o in d["overloads"]], d["overloads"][0]["code_hash"] == d["overloads"][1]["code_hash"], d["overloads"][0]["target"] == d["overloads"][1]["target"])')
    [ "$v" = "([('(int64)', 'znver3', True), ('(int64)', 'generic', False)], True, True)" ] &&
        ok corpus_twocpu_json || fail corpus_twocpu_json "got $v"
fi
if NUMBA_CPU_NAME=generic run corpus_twocpu_generic "$twocpu"; then   # numba's own override
    has corpus_twocpu_generic "cpu       generic  (matches this CPU)" &&
    has corpus_twocpu_generic "hit: 1 of 2 overloads usable on this CPU (generic): [2];" && ok corpus_twocpu_generic
fi

# stale: stamp mismatch, size and mtime both differ, recompiles
export NUMBA_CACHE_DIR=$tmp/corpus/stale/cache
if run corpus_stale "$stale"; then
    has corpus_stale "MISMATCH: mtime differs by +0.425 s, size differs (source 117, index 94)" &&
    has corpus_stale "verdict    stamp mismatch: mod.py mtime differs by +0.425 s, size differs (source 117," &&
    has corpus_stale "overloads discarded, inc recompiles" && [ "$rc" = 0 ] && ok corpus_stale
fi
if run corpus_stale_json --json "$stale"; then
    v=$(json_get '(d["verdict"]["code"], d["stamp"]["kind"], d["stamp"]["size"], d["stamp"]["source_size"], d["stamp"]["matches"])')
    [ "$v" = "('stale', 'mtime-size', 94, 117, False)" ] && ok corpus_stale_json || fail corpus_stale_json "got $v"
fi
# --source names the file numba compiles: another name, or the same name elsewhere, is never read
# from here (the stamp is still compared)
cp "$tmp/corpus/simple/mod.py" "$tmp/other.py"
touch -d @1795352698.453644929 "$tmp/other.py"
if run corpus_source_option --source "$tmp/other.py" "$simple"; then
    has corpus_source_option "found by: --source" && has corpus_source_option "MISMATCH: mtime differs by +1.000 s, size same (167" &&
        has corpus_source_option "verdict    numba never reads this index: numba names add's indexes after its" &&
        ok corpus_source_option
fi
cp "$tmp/corpus/simple/mod.py" "$tmp/mod.py"
if run corpus_source_other_dir --json --source "$tmp/mod.py" "$simple"; then
    v=$(json_get '(d["verdict"]["code"], "made for a source in another directory" in d["source"]["never_read_why"])')
    [ "$v" = "('never-read', True)" ] && ok corpus_source_other_dir || fail corpus_source_other_dir "got $v"
fi
# another numba version ignores the index
if run corpus_version --cache-dir "$tmp/corpus/simple/cache" --numba-version 0.60.0 "$simple"; then
    has corpus_version "numba version differs (index 0.56.4, running 0.60.0)" && ok corpus_version
fi
unset NUMBA_CACHE_DIR

# ----------------------------------------------------------------------------------------------
# tests/data/numba-corpus: every case of numba 0.56.4, 0.60.0 and 0.68.1 against what that numba did
python3 "$root/tests/inspect_corpus.py" replay "$tool" "$root/tests/data/numba-corpus" "$tmp" >"$tmp/replay.log" 2>&1
cat "$tmp/replay.log"
failures=$((failures + $(grep -c '^FAIL ' "$tmp/replay.log")))
grep -q '^ok corpus_present' "$tmp/replay.log" || fail corpus_replay "inspect_corpus.py replay ran no check"
# tests/data/numba-env-corpus: what numba reads from the run's environment (numba_cases.py --env;
# numba 0.56.4, 0.61.2, 0.64.0, 0.68.1), each case's variables given to the tool as numba had them
mkdir -p "$tmp/env"
python3 "$root/tests/inspect_corpus.py" replay "$tool" "$root/tests/data/numba-env-corpus" "$tmp/env" >"$tmp/replay.log" 2>&1
cat "$tmp/replay.log"
failures=$((failures + $(grep -c '^FAIL ' "$tmp/replay.log")))
grep -q '^ok corpus_present' "$tmp/replay.log" || fail corpus_env_replay "inspect_corpus.py replay ran no check"
# tests/data/numba-real-corpus: the cases real projects hit (numba_cases.py --real, issue 38; numba
# 0.56.4, 0.64.0, 0.68.1), told the recording machine's CPU
mkdir -p "$tmp/real"
python3 "$root/tests/inspect_corpus.py" replay "$tool" "$root/tests/data/numba-real-corpus" "$tmp/real" >"$tmp/replay.log" 2>&1
cat "$tmp/replay.log"
failures=$((failures + $(grep -c '^FAIL ' "$tmp/replay.log")))
grep -q '^ok corpus_present' "$tmp/replay.log" || fail corpus_real_replay "inspect_corpus.py replay ran no check"

# ----------------------------------------------------------------------------------------------
# numba here: Debian's (/usr/bin/python3) and PyPI's newest (build/venv-numba); each makes every
# case now and is run on it again (NUMBA_DEBUG_CACHE=1), and kcache-inspect, detecting this CPU
# itself, must say what numba did (the live half of inspect_corpus.py)
venv_py=$root/build/venv-numba/bin/python
"$root/scripts/numba-venv.sh" >"$tmp/venv.log" 2>&1
venv_rc=$?
if [ "$venv_rc" = 3 ]; then
    skip "live_venv_*" "$(tail -n 1 "$tmp/venv.log" | sed 's/^numba-venv: //') (scripts/numba-venv.sh): PyPI's numba not compared"
elif [ "$venv_rc" != 0 ]; then
    fail venv_numba "scripts/numba-venv.sh failed: $(tail -n 3 "$tmp/venv.log" | tr '\n' ' ')"
fi
pys=()
if /usr/bin/python3 -c 'import numba' >/dev/null 2>&1; then pys+=(/usr/bin/python3)
else fail debian_numba "/usr/bin/python3 cannot import numba (apt-get install python3-numba)"; fi
[ "$venv_rc" = 0 ] && "$venv_py" -c 'import numba' >/dev/null 2>&1 && pys+=("$venv_py")
# the corpus's numba 0.60 too, where its venv was made (not in CI: one more numba to fetch)
v060=$root/build/venv-numba-0.60/bin/python
if [ -x "$v060" ] && "$v060" -c 'import numba' >/dev/null 2>&1; then pys+=("$v060")
else echo "# numba 0.60's corpus is replayed only (made again where scripts/numba-venv.sh --numba 'numba==0.60.*' build/venv-numba-0.60 ran)"; fi
for py in "${pys[@]}"; do
    other=()
    for o in "${pys[@]}"; do [ "$o" != "$py" ] && [ ${#other[@]} = 0 ] && other=(--other "$o"); done
    python3 "$root/tests/inspect_corpus.py" live "$tool" "$py" "$tmp" "${other[@]}" --corpus "$root/tests/data/numba-corpus" \
        >"$tmp/live.log" 2>&1
    cat "$tmp/live.log"
    failures=$((failures + $(grep -c '^FAIL ' "$tmp/live.log")))
    # the environment cases, on this machine's own CPU (detected: the feature string's order counts)
    python3 "$root/tests/inspect_corpus.py" live "$tool" "$py" "$tmp" --env >"$tmp/live.log" 2>&1
    cat "$tmp/live.log"
    failures=$((failures + $(grep -c '^FAIL ' "$tmp/live.log")))
    # the cases real projects hit (issue 38), made now with this numba, compared with the corpus
    python3 "$root/tests/inspect_corpus.py" live "$tool" "$py" "$tmp" --real --corpus "$root/tests/data/numba-real-corpus" \
        >"$tmp/live.log" 2>&1
    cat "$tmp/live.log"
    failures=$((failures + $(grep -c '^FAIL ' "$tmp/live.log")))
done

# what only the text report shows, on the live caches
for d in "$tmp"/live-*; do
    [ -f "$d/cases.json" ] || continue
    case $d in */live-env-*|*/live-real-*) continue ;; esac
    ver=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["numba"])' "$d/cases.json")
    n="live_${ver}_text"
    lix() { python3 -c 'import json,sys; print(sys.argv[2] + "/" + json.load(open(sys.argv[1]))["cases"][sys.argv[3]]["indexes"][int(sys.argv[4])])' "$d/cases.json" "$d" "$1" "${2:-0}"; }
    # text_case NAME CASE INDEX PATTERN...: the text report on that case's index holds every PATTERN
    text_case() {
        local name=$1 c=$2 i=$3 p
        shift 3
        run "$name" "$(lix "$c" "$i")" || return
        for p in "$@"; do has "$name" "$p" || return; done
        ok "$name"
    }
    text_case "${n}_sigs" sigs 0 "numba      $ver" "found by: __pycache__ parent" "[3] (complex128, complex128)" \
        "(array(float32, 2d, F), array(float32, 2d, F))" "(unicode_type, unicode_type)" \
        "verdict    hit: 5 of 5 overloads usable on this CPU" "same as host name by name"
    # [2] was compiled with NUMBA_CPU_NAME=generic: where this numba's LLVM calls the host generic
    # too (a Zen 5 before LLVM 19), the two keys differ in the features alone
    hcpu=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["host"]["cpu"])' "$d/cases.json")
    differ="CPU name, CPU features"
    [ "$hcpu" = generic ] && differ="CPU features"
    text_case "${n}_two_cpus" two_cpus 0 "same signature as [1]; differs only in: $differ" \
        "hit: 1 of 2 overloads usable on this CPU" "[1]; every signature covered"
    if NUMBA_CPU_NAME=generic run "${n}_two_cpus_env" "$(lix two_cpus)"; then
        has "${n}_two_cpus_env" "hit: 1 of 2 overloads usable on this CPU (generic): [2];" && ok "${n}_two_cpus_env"
    fi
    text_case "${n}_closure" closure 0 "function   make.locals.addk (module c_closure, first line 5)" \
        "(captured values are part of the key)" "verdict    hit:" "a closure: its captured values are hashed too, and cannot be known without"
    text_case "${n}_parallel" parallel 0 "[1] (array(float64, 1d, C))" "verdict    hit: 1 of 1"
    text_case "${n}_vectorize" vectorize 0 "[1] (float64, float64) -> float64" "[2] (int64, int64) -> int64" "verdict    hit: 2 of 2"
    text_case "${n}_guvectorize" guvectorize 1 "note: guf-... is @guvectorize's wrapper index; the kernel has its own (c_guvectorize.gsum-5." \
        "source     $d/guvectorize/c_guvectorize.py"
    text_case "${n}_stale_dep" stale_dep 0 "warning    numba will reuse code compiled against the old" "c_stale_dep_helper.py" \
        "remove the index to recompile"
    text_case "${n}_raises_data" raises_data 0 "BROKEN: does not unpickle" "verdict    numba will raise:"
    text_case "${n}_never_read_line" never_read_line 0 "NEVER READ: f now starts at line 5, not 4: numba looks up" "c_never_read_line.f-5.py"
    # a module the source imports from a --path root (not beside it) is followed too
    mkdir -p "$tmp/pathroot-$ver" && mv "$d/stale_dep/c_stale_dep_helper.py" "$tmp/pathroot-$ver/"
    if run "${n}_path_root" --json "$(lix stale_dep)"; then
        v=$(json_get 'd["warnings"]')
        if [ "$v" = "[]" ] && run "${n}_path_root" --json --path "$tmp/pathroot-$ver" "$(lix stale_dep)"; then
            v=$(json_get '[w["path"] for w in d["warnings"]]')
            [ "$v" = "['$tmp/pathroot-$ver/c_stale_dep_helper.py']" ] && ok "${n}_path_root" || fail "${n}_path_root" "with --path: $v"
        else fail "${n}_path_root" "without --path: $v"; fi
    fi
    mv "$tmp/pathroot-$ver/c_stale_dep_helper.py" "$d/stale_dep/"
    # the run's Python's site directories are searched too (a made-up venv: pyvenv.cfg and
    # bin/python), and a directory a .pth file there names (an editable install) is followed
    tag=$(lix stale_dep); tag=${tag##*.py}; tag=${tag%.nbi}; pyv=${tag:0:1}.${tag:1}
    pyx=$(python$pyv -c 'import sys; print(sys.executable)' 2>/dev/null)
    if [ -z "$pyx" ]; then skip "${n}_site_dirs" "no python$pyv here to stand for the run's Python"
    else
        sv=$tmp/sitevenv-$ver sp=$tmp/sitevenv-$ver/lib/python$pyv/site-packages ed=$tmp/editable-$ver
        mkdir -p "$sv/bin" "$sp" "$ed"
        printf 'home = %s\ninclude-system-site-packages = false\n' "${pyx%/*}" >"$sv/pyvenv.cfg"
        ln -s "$pyx" "$sv/bin/python"
        mv "$d/stale_dep/c_stale_dep_helper.py" "$sp/"
        if run "${n}_site_dirs" --json --python "$sv/bin/python" "$(lix stale_dep)"; then
            v=$(json_get '[w["path"] for w in d["warnings"]]')
            [ "$v" = "['$sp/c_stale_dep_helper.py']" ] && ok "${n}_site_dirs" || fail "${n}_site_dirs" "got $v"
        fi
        mv "$sp/c_stale_dep_helper.py" "$ed/"
        printf '# a comment\nimport sys\n%s\n' "$ed" >"$sp/__editable__.c_stale_dep-1.0.pth"
        if run "${n}_site_pth" --json --python "$sv/bin/python" "$(lix stale_dep)"; then
            v=$(json_get '[w["path"] for w in d["warnings"]]')
            [ "$v" = "['$ed/c_stale_dep_helper.py']" ] && ok "${n}_site_pth" || fail "${n}_site_pth" "got $v"
        fi
        mv "$ed/c_stale_dep_helper.py" "$d/stale_dep/"
    fi
    # and the current directory (sys.path[0] for python -m or -c, or a script run from there)
    here=$PWD
    mkdir -p "$tmp/cwd-$ver" && mv "$d/stale_dep/c_stale_dep_helper.py" "$tmp/cwd-$ver/" && cd "$tmp/cwd-$ver" &&
    if run "${n}_cwd_root" --json "$(lix stale_dep)"; then
        v=$(json_get '[w["path"] for w in d["warnings"]]')
        [ "$v" = "['$(pwd -P)/c_stale_dep_helper.py']" ] && ok "${n}_cwd_root" || fail "${n}_cwd_root" "got $v"
    fi
    cd "$here" && mv "$tmp/cwd-$ver/c_stale_dep_helper.py" "$d/stale_dep/"
    # every live index: --json parses
    bad=
    for f in $(find "$d" -name '*.nbi'); do
        run "${n}_json_all" --json "$f" || { bad=1; continue; }
        python3 -m json.tool <"$tmp/out" >/dev/null 2>&1 || bad="$bad $f"
    done
    [ -z "$bad" ] && ok "${n}_json_all" || fail "${n}_json_all" "JSON did not parse for:$bad"
done

# ----------------------------------------------------------------------------------------------
# the CPU name each LLVM computes, on made-up CPUs: kcache-inspect --host and the LLVMs here
# (Debian's llvmlite, LLVM 14; the venv's, PyPI's newest) run under qemu-x86_64 with the same
# CPUID (scripts/llvm-host-names.sh does this for every LLVM numba uses)
libs=()
for l in /usr/lib/python3/dist-packages/llvmlite/binding/libllvmlite.so "$root"/build/venv-numba/lib/python3*/site-packages/llvmlite/binding/libllvmlite.so; do
    [ -f "$l" ] && libs+=("$l")
done
if [ "$(uname -m)" != x86_64 ] || ! command -v qemu-x86_64-static >/dev/null; then
    skip "qemu_cpu_names_*" "needs an x86-64 host and qemu-x86_64-static (Debian: qemu-user-static)"
elif grep -q -a __asan_init "$tool"; then
    skip "qemu_cpu_names_*" "$tool is an AddressSanitizer build, which qemu-user cannot run (make test runs the plain one)"
elif [ ${#libs[@]} = 0 ] || ! command -v cc >/dev/null; then
    fail qemu_cpu_names "no llvmlite library (apt-get install python3-numba) or no C compiler"
else
    cc -O1 -o "$tmp/ask" "$root/tests/llvm_host_name.c" -ldl 2>"$tmp/cc.err" || fail qemu_cpu_names "cc: $(head -c 300 "$tmp/cc.err")"
    I=qemu64,vendor=GenuineIntel A=qemu64,vendor=AuthenticAMD
    specs=("$A,family=26,model=2" "$A,family=25,model=17" "$A,family=25,model=97" "$A,family=25,model=33" "$A,family=23,model=96"
           "$A,family=23,model=113" "$A,family=18,model=1" "$I,family=6,model=183" "$I,family=6,model=207" "$I,family=6,model=143"
           "$I,family=6,model=170" "$I,family=19,model=1" "$I,family=6,model=254,+ssse3,+sse4.1,+sse4.2,+movbe")
    pairs=0 bad=
    for s in "${specs[@]}"; do
        [ -x "$tmp/ask" ] || break
        llvm=$(qemu-x86_64-static -cpu "$s" "$tmp/ask" "${libs[@]}" 2>/dev/null)
        qemu-x86_64-static -cpu "$s" "$tool" --host --json >"$tmp/out" 2>"$tmp/err" || { bad="$bad [$s: kcache-inspect failed]"; continue; }
        for pair in $llvm; do
            v=${pair%%:*} want=${pair#*:}
            got=$(json_get "d['llvm'].get('$v', '?')")
            pairs=$((pairs + 1))
            [ "$got" = "$want" ] || bad="$bad [$s LLVM $v: LLVM says $want, kcache says $got]"
        done
    done
    [ -z "$bad" ] && [ "$pairs" -ge "${#specs[@]}" ] && ok "qemu_cpu_names_${#specs[@]}_cpus_${pairs}_pairs" ||
        fail qemu_cpu_names "${bad:-no pair compared}"
fi
# this machine's CPU: what each LLVM here calls it, against kcache-inspect's name for that LLVM
# (the names of LLVMs before the newest are the tool's: tools/inspect_llvm.c)
if [ "$(uname -m)" != x86_64 ] || [ ${#libs[@]} = 0 ] || ! command -v cc >/dev/null; then
    skip host_cpu_names "needs an x86-64 host, llvmlite (apt-get install python3-numba) and a C compiler"
else
    [ -x "$tmp/ask" ] || cc -O1 -o "$tmp/ask" "$root/tests/llvm_host_name.c" -ldl 2>/dev/null
    llvm=$("$tmp/ask" "${libs[@]}" 2>/dev/null)
    "$tool" --host --json >"$tmp/out" 2>"$tmp/err"
    pairs=0 bad=
    for pair in $llvm; do
        v=${pair%%:*} want=${pair#*:}
        got=$(json_get "d['llvm'].get('$v', '?')")
        pairs=$((pairs + 1))
        [ "$got" = "$want" ] || bad="$bad [LLVM $v: LLVM says $want, kcache-inspect says $got]"
    done
    [ -z "$bad" ] && [ "$pairs" -ge 1 ] && ok "host_cpu_names_${pairs}_llvms" || fail host_cpu_names "${bad:-no LLVM answered: $llvm}"
fi
if run host_report --host; then
    has host_report "host CPU   " && has host_report "0.56       LLVM 11" && has host_report "0.66-0.68  LLVM 22" && [ "$rc" = 0 ] && ok host_report
fi

# ----------------------------------------------------------------------------------------------
# --prune, on a copy of the corpus: what numba would raise on or never use again goes, nothing
# else, and nothing outside a __pycache__ or a numba cache directory
pr=$tmp/prune
cp -R "$root/tests/data/numba-corpus/0.68.1" "$pr"
python3 -c 'import json, os, sys
root = sys.argv[1]
for e in json.load(open(os.path.join(root, "cases.json")))["cases"].values():
    for rel, ns in e["mtimes"].items():
        p = os.path.join(root, rel)
        if os.path.exists(p): os.utime(p, ns=(ns, ns))' "$pr"
pcpu=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["host"]["cpu"])' "$pr/cases.json")
pfeat=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["host"]["features"])' "$pr/cases.json")
P=(--cpu "$pcpu" --features "$pfeat")
# beside the caches: a file that is not numba's, a .nbi outside any cache directory, an orphan .nbc,
# a link into a cache directory
echo 'x = 1' >"$pr/hit/__pycache__/other.cpython-311.pyc"
cp "$pr/hit/__pycache__/c_hit.f-4.py311.nbi" "$pr/hit/not-a-cache.nbi"
cp "$pr/hit/__pycache__/c_hit.f-4.py311.1.nbc" "$pr/hit/__pycache__/c_hit.f-4.py311.9.nbc"
ln -s "$pr/raises_index/__pycache__" "$pr/hit/link-to-cache"
listing() { (cd "$pr" && find . -type f -printf '%p %s\n' | sort | md5sum); }
before=$(listing)
if run prune_dry_run --prune "${P[@]}" "$pr"; then
    has prune_dry_run "would remove $pr/raises_index/__pycache__/c_raises_index.f-4.py311.nbi" &&
    has prune_dry_run "would remove $pr/raises_index/__pycache__/c_raises_index.f-4.py311.1.nbc" &&
    has prune_dry_run "would remove $pr/raises_data/__pycache__/c_raises_data.f-4.py311.1.nbc" &&
    has prune_dry_run "would remove $pr/stale_edit/__pycache__/c_stale_edit.f-4.py311.nbi" &&
    has prune_dry_run "would remove $pr/hit/__pycache__/c_hit.f-4.py311.9.nbc" &&
    has prune_dry_run "a dry run: --yes removes them" && [ "$before" = "$(listing)" ] && [ "$rc" = 0 ] && ok prune_dry_run
    listed=$(grep '^would remove' <<<"$out")
    bad=
    for keep in hit/__pycache__/c_hit.f-4.py311.nbi hit/__pycache__/c_hit.f-4.py311.1.nbc raises_data/__pycache__/c_raises_data.f-4.py311.nbi \
                not-a-cache.nbi c_version_mismatch.f-4.py311 c_cpu_mismatch.f-4.py311 other.cpython-311.pyc link-to-cache; do
        grep -q -F -e "$keep" <<<"$listed" && bad="$bad $keep"
    done
    [ -z "$bad" ] && ok prune_dry_run_keeps || fail prune_dry_run_keeps "would remove:$bad"
fi
if run prune_version --json --prune "${P[@]}" --numba-version 0.68.1 "$pr/version_mismatch" "$pr/cpu_mismatch"; then
    v=$(json_get '(sorted(f["path"].rsplit("/", 1)[1] for f in d["files"]), d["mode"])')
    [ "$v" = "(['c_version_mismatch.f-4.py311.1.nbc', 'c_version_mismatch.f-4.py311.nbi'], 'dry-run')" ] && ok prune_version ||
        fail prune_version "got $v"
fi
if run prune_other_cpu --prune --other-cpu "${P[@]}" "$pr/cpu_mismatch" "$pr/hit"; then
    if has prune_other_cpu "would remove $pr/cpu_mismatch/__pycache__/c_cpu_mismatch.f-4.py311.nbi"; then
        grep -q "c_hit.f-4.py311.nbi" <<<"$out" && fail prune_other_cpu "lists the hit's index" || ok prune_other_cpu
    fi
fi
if run prune_outside --prune "$pr/hit/not-a-cache.nbi"; then
    has prune_outside "left alone $pr/hit/not-a-cache.nbi: only .nbi and .nbc files in a __pycache__ or a numba cache directory" &&
        [ -f "$pr/hit/not-a-cache.nbi" ] && ok prune_outside
fi
if run prune_yes --prune --yes "${P[@]}" "$pr"; then
    gone=
    for f in raises_index/__pycache__/c_raises_index.f-4.py311.nbi raises_index/__pycache__/c_raises_index.f-4.py311.1.nbc \
             raises_data/__pycache__/c_raises_data.f-4.py311.1.nbc stale_edit/__pycache__/c_stale_edit.f-4.py311.nbi \
             hit/__pycache__/c_hit.f-4.py311.9.nbc; do [ -e "$pr/$f" ] && gone="$gone $f"; done
    kept=
    for f in hit/__pycache__/c_hit.f-4.py311.nbi hit/__pycache__/c_hit.f-4.py311.1.nbc hit/__pycache__/other.cpython-311.pyc \
             hit/not-a-cache.nbi raises_data/__pycache__/c_raises_data.f-4.py311.nbi cpu_mismatch/__pycache__/c_cpu_mismatch.f-4.py311.nbi \
             version_mismatch/__pycache__/c_version_mismatch.f-4.py311.nbi hit/c_hit.py; do [ -e "$pr/$f" ] || kept="$kept $f"; done
    [ -L "$pr/hit/link-to-cache" ] || kept="$kept link-to-cache"
    [ -z "$gone" ] && [ -z "$kept" ] && has prune_yes "removed" && ok prune_yes || fail prune_yes "still there:$gone; gone:$kept"
    # what stayed is still a hit; an index whose only .nbc went: numba recompiles that overload
    if run prune_after "${P[@]}" "$pr/hit/__pycache__/c_hit.f-4.py311.nbi"; then
        has prune_after "verdict    hit: 2 of 2" && ok prune_after
    fi
    if run prune_after_data --json "${P[@]}" "$pr/raises_data/__pycache__/c_raises_data.f-4.py311.nbi"; then
        v=$(json_get 'd["verdict"]["code"]')
        [ "$v" = data-missing ] && ok prune_after_data || fail prune_after_data "got $v"
    fi
fi
check_args2() { if run "$1" "${@:3}"; then [ "$rc" = 2 ] && grep -q -F -- "$2" <<<"$err" && ok "$1" || fail "$1" "status $rc: $err"; fi; }
check_args2 prune_needs_path "--prune needs a PATH" --prune
check_args2 prune_yes_alone "--yes and --other-cpu go with --prune" --yes "$pr"
check_args2 args_llvm_version "--llvm-version 'x' is not an LLVM major version" --llvm-version x "$pr"

# ----------------------------------------------------------------------------------------------
# notebook cells without numba: the function's text found in an edited cell
c68=$root/tests/data/numba-corpus/0.68.1
nbi=$c68/$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cases"]["notebook"]["indexes"][0])' "$c68/cases.json")
if run notebook_no_source "$nbi"; then
    has notebook_no_source "a notebook cell's index (IPython's locator" && has notebook_no_source "FILE holding the cell's text" &&
        ok notebook_no_source
fi
{ echo "# another line first"; echo; cat "$c68/notebook/cell.py"; } >"$tmp/cell1.py"   # moved down: still its text
sed 's/def f(x):/def f(x, y=0):/' "$c68/notebook/cell.py" >"$tmp/cell2.py"            # its first two lines changed
sed 's/    return y + 1/    return (y +\n            1)/' "$c68/notebook/cell.py" >"$tmp/cell3.py"   # its body changed over two lines
for i in 1 2 3; do
    want=$(case $i in 1) echo hit ;; 2) echo never-read ;; 3) echo stale ;; esac)
    if run "notebook_cell_$i" --json --cpu "$pcpu" --features "$pfeat" --source "$tmp/cell$i.py" "$nbi"; then
        v=$(json_get 'd["verdict"]["code"]')
        [ "$v" = "$want" ] && ok "notebook_cell_$i" || fail "notebook_cell_$i" "got $v, want $want"
    fi
done

# ----------------------------------------------------------------------------------------------
# the run's environment, on copies of tests/data/numba-env-corpus/0.68.1 (sha256 stamps: no mtimes to
# put back): the bytecode needs a Python of the index's version; another module's locator class
# cannot be known; a numba cache directory given as DIR is every index in it
e68=$root/tests/data/numba-env-corpus/0.68.1
ecpu=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["host"]["cpu"])' "$e68/cases.json")
efeat=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["host"]["features"])' "$e68/cases.json")
cp -R "$e68/pythonoptimize" "$tmp/po"
po=$tmp/po/__pycache__/c_pythonoptimize.f-4.py311.nbi
if run env_bytecode_checked --cpu "$ecpu" --features "$efeat" "$po"; then
    has env_bytecode_checked "bytecode   sha256 " && has env_bytecode_checked "1 of 1 overloads hold it" &&
        has env_bytecode_checked "verdict    hit: 1 of 1" && ok env_bytecode_checked
fi
if PYTHONOPTIMIZE=1 run env_bytecode_optimize --cpu "$ecpu" --features "$efeat" "$po"; then
    has env_bytecode_optimize "at optimization level 1" && has env_bytecode_optimize "verdict    bytecode differs: the stamp matches" &&
        ok env_bytecode_optimize
fi
mv "$po" "${po%.py311.nbi}.py399.nbi"
if run env_bytecode_no_python --json --cpu "$ecpu" --features "$efeat" "${po%.py311.nbi}.py399.nbi"; then
    v=$(json_get '(d["bytecode"]["checked"], "no python3.99 here" in d["bytecode"]["why"], d["verdict"]["code"])')
    [ "$v" = "(False, True, 'hit')" ] && ok env_bytecode_no_python || fail env_bytecode_no_python "got $v"
fi
mv "${po%.py311.nbi}.py399.nbi" "$po"
if run env_locator_unknown --json --locator-classes mypkg.caching.MyLocator --cpu "$ecpu" --features "$efeat" "$po"; then
    v=$(json_get '(d["verdict"]["code"], d["source"]["locator"], d["verdict"]["text"].startswith("cannot say"))')
    [ "$v" = "('unknown-locator', 'unknown', True)" ] && [ "$rc" = 0 ] && ok env_locator_unknown || fail env_locator_unknown "status $rc, $v"
fi
if run env_locator_intree --json --locator-classes numba.core.caching.InTreeCacheLocator --cpu "$ecpu" --features "$efeat" "$po"; then
    v=$(json_get '(d["verdict"]["code"], d["source"]["locator"])')
    [ "$v" = "('hit', 'InTreeCacheLocator')" ] && ok env_locator_intree || fail env_locator_intree "got $v"
fi
if run env_cache_dir_option --json --cache-dir "$tmp/po/ncd" --cpu "$ecpu" --features "$efeat" "$po"; then
    v=$(json_get '(d["verdict"]["code"], d["source"]["locator"], d["source"]["numba_opens"].startswith("'"$tmp"'/po/ncd/po_"))')
    [ "$v" = "('never-read', 'UserProvidedCacheLocator', True)" ] && ok env_cache_dir_option || fail env_cache_dir_option "got $v"
fi
# a stale .pyc under the run's pycache prefix (issue 38 item 6): Python runs the .pyc it finds there,
# as -X pycache_prefix (--pycache-prefix) or PYTHONPYCACHEPREFIX places it; numba <= 0.67 then hits
r56=$root/tests/data/numba-real-corpus/0.56.4
cp -R "$r56/pyc_timestamp" "$tmp/pp"
python3 -c 'import json,os,sys
m = json.load(open(sys.argv[1]))["cases"]["pyc_timestamp"]["mtimes"]
for rel, ns in m.items():
    os.utime(os.path.join(sys.argv[2], rel.split("/", 1)[1]), ns=(ns, ns))' "$r56/cases.json" "$tmp/pp"
pfxdir=$tmp/pfx$tmp/pp   # the prefix holds the source directory's path, no __pycache__
mkdir -p "$pfxdir" && mv "$tmp/pp/__pycache__/c_pyc_timestamp.cpython-311.pyc" "$pfxdir/"
ppix=$tmp/pp/__pycache__/c_pyc_timestamp.f-4.py311.nbi
rcpu=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["host"]["features"])' "$r56/cases.json")
for how in none option env; do
    want=hit; pyc=True
    case $how in
        none) want=stale; pyc=False; a=() ;;
        option) a=(--pycache-prefix "$tmp/pfx") ;;
        env) a=() ;;
    esac
    if PYTHONPYCACHEPREFIX=$([ $how = env ] && echo "$tmp/pfx") run "env_pycache_prefix_$how" --json --cpu znver3 --features "$rcpu" "${a[@]}" "$ppix"; then
        v=$(json_get '(d["verdict"]["code"], d["bytecode"]["pyc"] is not None)')
        [ "$v" = "('$want', $pyc)" ] && ok "env_pycache_prefix_$how" || fail "env_pycache_prefix_$how" "got $v, want ('$want', $pyc)"
    fi
done
# AVX10 as each LLVM's host detection reports it (issue 38 item 1), under a made-up CPUID
# (KCACHE_INSPECT_CPUID): leaf 7.1 EDX bit 19, leaf 0x24 subleaf 0 EBX = version 1 and 512-bit
# vectors, the AVX-512 state saved.  LLVM 18-19 read the bit alone for avx10.1-256; before 22
# LLVM read leaf 0x24 without ECX = 0 (another subleaf: no version, no 512 bits); 22 reads subleaf 0
avx10_cpuid='0:24:0:0:0,7:1:0:0:0,7.1:0:0:0:80000,24:0:40001:0:0,xcr0:e7'
for c in "18 +avx10.1-256,-avx10.1-512" "19 +avx10.1-256,-avx10.1-512" "20 -avx10.1-256,-avx10.1-512,-avx10.2-256,-avx10.2-512" \
         "21 -avx10.1,-avx10.2" "22 +avx10.1,-avx10.2"; do
    lv=${c%% *} want=${c#* }
    if KCACHE_INSPECT_CPUID=$avx10_cpuid run "host_avx10_llvm$lv" --json --llvm-version "$lv" "$ppix"; then
        v=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); w=sys.argv[2].split(",")
print(",".join(f for f in d["host"]["features"].split(",") if f[1:] in [x[1:] for x in w]))' "$tmp/out" "$want")
        [ "$v" = "$want" ] && ok "host_avx10_llvm$lv" || fail "host_avx10_llvm$lv" "got '$v', want '$want'"
    fi
done
# LLVM 18-22 set the AVX10 names from CPUID alone (no test of the saved AVX-512 state), and each
# LLVM reports only the names it has: none before 18, -256/-512 up to 20, avx10.1/avx10.2 from 21
nosave_cpuid=${avx10_cpuid%,xcr0:e7}
for c in "17 " "18 +avx10.1-256,-avx10.1-512" "20 -avx10.1-256,-avx10.1-512,-avx10.2-256,-avx10.2-512" "22 +avx10.1,-avx10.2"; do
    lv=${c%% *} want=${c#* }
    if KCACHE_INSPECT_CPUID=$nosave_cpuid run "host_avx10_names_llvm$lv" --json --llvm-version "$lv" "$ppix"; then
        v=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
print(",".join(f for f in d["host"]["features"].split(",") if f[1:].startswith("avx10")))' "$tmp/out")
        [ "$v" = "$want" ] && ok "host_avx10_names_llvm$lv" || fail "host_avx10_names_llvm$lv" "got '$v', want '$want'"
    fi
done
# the index says which numba, so which LLVM, reads it: numba 0.64 (LLVM 20) on that CPU has no AVX10
if KCACHE_INSPECT_CPUID=$avx10_cpuid run host_avx10_numba064 --json "$root/tests/data/numba-real-corpus/0.64.0/fc_arg/__pycache__/c_fc_arg.apply-9.py311.nbi"; then
    v=$(json_get '[f for f in d["host"]["features"].split(",") if f[1:] in ("avx10.1-256", "avx10.1-512")]')
    [ "$v" = "['-avx10.1-256', '-avx10.1-512']" ] && ok host_avx10_numba064 || fail host_avx10_numba064 "got $v"
fi
# a user-wide index whose source is gone (the tree moved): no source is named, nothing is guessed
mkdir -p "$tmp/uw" && cp -R "$e68/xdg" "$tmp/uw/"
uw=$(ls "$tmp"/uw/xdg/numba/userwide_hit_*/*.nbi)
if run env_source_not_found "$uw"; then
    has env_source_not_found "source     not found (looked for c_userwide_hit.py)" &&
        has env_source_not_found "verdict    cannot check the stamp: source not found" && ok env_source_not_found
fi
if run env_source_not_found_json --json "$uw"; then
    v=$(json_get '(d["source"]["path"], d["source"]["looked_for"].endswith("c_userwide_hit.py"), d["verdict"]["code"])')
    [ "$v" = "(None, True, 'unchecked')" ] && ok env_source_not_found_json || fail env_source_not_found_json "got $v"
fi
cp -R "$e68/guf_nbc_gone" "$tmp/gg"
if run env_numba_dir --json --cpu "$ecpu" --features "$efeat" "$tmp/gg/__pycache__"; then
    v=$(json_get '(d["format"], [(x["file"].rsplit("/", 1)[1], x["verdict"]["code"]) for x in d["indexes"]])')
    [ "$v" = "('numba-index-dir', [('c_guf_nbc_gone.gsum-5.py311.nbi', 'data-missing'), ('guf-c_guf_nbc_gone.gsum-5.py311.nbi', 'data-missing')])" ] &&
        [ "$rc" = 0 ] && ok env_numba_dir || fail env_numba_dir "status $rc, $v"
fi

# ----------------------------------------------------------------------------------------------
# robustness: truncations, byte flips and the regression inputs never crash (exit 0 or 2)
seeds=("$simple" "$twocpu" "$stale" "$nbi")
for v in 0.56.4 0.68.1; do
    for c in hit guvectorize raises_index; do seeds+=($(ls "$root/tests/data/numba-corpus/$v/$c/__pycache__/"*.nbi | head -n 1)); done
done
mkdir -p "$tmp/mut/__pycache__"
printf 'x = 1\n' >"$tmp/mut/mod.py"
python3 - "$tmp/mut/__pycache__" "${seeds[@]}" <<'EOF'
import os, random, sys
out, seeds = sys.argv[1], sys.argv[2:]
rng = random.Random(20261122)
n = 0
for s in seeds:
    data = open(s, 'rb').read()
    cuts = sorted(set(list(range(0, min(len(data), 48))) + [rng.randrange(len(data)) for _ in range(60)] + [len(data) - 1]))
    for c in cuts:
        open(os.path.join(out, 'trunc%05d.nbi' % n), 'wb').write(data[:c]); n += 1
    for _ in range(60):
        b = bytearray(data)
        for _ in range(rng.choice((1, 1, 2, 4, 16))):
            i = rng.randrange(len(b))
            b[i] = rng.choice((rng.randrange(256), b[i] ^ (1 << rng.randrange(8)), 0xff, 0x00, 0x7f))
        open(os.path.join(out, 'flip%05d.nbi' % n), 'wb').write(bytes(b)); n += 1
EOF
total=0 decoded=0 rejected=0 badmsg=0 crashed=0
for f in "$tmp/mut/__pycache__"/*.nbi "$root"/tests/data/nbi-regress/*.nbi; do
    [ -f "$f" ] || continue
    total=$((total + 1))
    "$tool" "$f" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" -ge 128 ] || grep -q -E 'Sanitizer|runtime error:' "$tmp/err" || { [ "$rc" != 0 ] && [ "$rc" != 2 ]; }; then
        crashed=$((crashed + 1))
        [ "$crashed" -le 3 ] && echo "# crash ($rc) on $f: $(head -c 200 "$tmp/err")"
        continue
    fi
    if [ "$rc" = 0 ]; then decoded=$((decoded + 1))
    else
        rejected=$((rejected + 1))
        lines=$(wc -l <"$tmp/err")
        grep -q '^kcache-inspect: .*: ' "$tmp/err" && [ "$lines" = 1 ] || badmsg=$((badmsg + 1))
    fi
done
[ "$total" -ge 100 ] && [ "$crashed" = 0 ] && ok "mutants_no_crash_${total}_inputs_${decoded}_decoded_${rejected}_rejected" ||
    fail mutants_no_crash "$crashed of $total crashed"
[ "$badmsg" = 0 ] && ok mutants_one_line_message || fail mutants_one_line_message "$badmsg rejections without a one-line message"
n_regress=$(ls "$root"/tests/data/nbi-regress/*.nbi 2>/dev/null | wc -l)
[ "$n_regress" -ge 1 ] && ok "regress_inputs_present_$n_regress" || fail regress_inputs_present "no tests/data/nbi-regress/*.nbi"

# ----------------------------------------------------------------------------------------------
# bad files and bad arguments: exit 2 with a message
: >"$tmp/empty.nbi"
printf 'hello, not a pickle\n' >"$tmp/text.nbi"
printf '\x80\x04\x8c\x060.56.4\x94.' >"$tmp/nobody.nbi"
printf '\x80\x04\xff' >"$tmp/badop.nbi"
printf '\x80\x04\x95\xff\xff\xff\xff\xff\xff\xff\x7f' >"$tmp/hugeframe.nbi"
printf '\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\xff' >"$tmp/hugestr.nbi"
# ----------------------------------------------------------------------------------------------
# numba 0.68 on Python 3.12, made on another machine (an Emerald Rapids Xeon): decoded, the sha256
# stamp holds after the copy, and the verdict names the CPU that differs
dev="$root/tests/data/nbi-h100"
cp -R "$dev" "$tmp/h100"
if run h100_decode "$tmp/h100/__pycache__/mod.dot-4.py312.nbi" --cpu skylake-avx512 --features +avx2; then
    has h100_decode "numba      0.68.0" && has h100_decode "Python 3.12" && has h100_decode "check    match" &&
        has h100_decode "overloads  2" && has h100_decode "(array(float32, 1d, C), array(float32, 1d, C))" &&
        has h100_decode "cpu       emeraldrapids" && has h100_decode "mod.dot-4.py312.2.nbc  (15104 bytes)" &&
        has h100_decode "index has emeraldrapids" && ok h100_decode
fi
if run h100_same_cpu "$tmp/h100/__pycache__/mod.add-2.py312.nbi" --cpu emeraldrapids; then
    has h100_same_cpu "cpu       emeraldrapids" && has h100_same_cpu "same name but other features" && ok h100_same_cpu
fi

check_exit2() { # NAME PATTERN ARGS...
    local name=$1 pat=$2; shift 2
    if run "$name" "$@"; then
        if [ "$rc" = 2 ] && grep -q -F -- "$pat" <<<"$err"; then ok "$name"; else fail "$name" "status $rc, stderr '$err'"; fi
    fi
}
# what numba's pickle.load raises on (EOFError, UnpicklingError) is a verdict: exit 0
raises0() { # NAME PATTERN FILE
    if run "$1" --json "$3"; then
        v=$(json_get '(d["verdict"]["code"], d["version_error"])')
        [ "$rc" = 0 ] && grep -q -F -- "$2" <<<"$v" && [ "${v#(\'raises\'}" != "$v" ] && ok "$1" || fail "$1" "status $rc, $v"
    fi
}
raises0 bad_empty_file "EOFError: Ran out of input" "$tmp/empty.nbi"
raises0 bad_not_pickle "UnpicklingError" "$tmp/text.nbi"
# the version pickle alone: numba of that version raises (EOFError) reading the body; another ignores it
if run bad_no_body --json "$tmp/nobody.nbi"; then
    v=$(json_get '(d["verdict"]["code"], d["body_error"].startswith("no index body"))')
    [ "$rc" = 0 ] && [ "$v" = "('raises', True)" ] && ok bad_no_body || fail bad_no_body "status $rc, $v"
fi
if run bad_no_body_other_version --json --numba-version 0.68.1 "$tmp/nobody.nbi"; then
    v=$(json_get 'd["verdict"]["code"]')
    [ "$rc" = 0 ] && [ "$v" = version-mismatch ] && ok bad_no_body_other_version || fail bad_no_body_other_version "status $rc, $v"
fi
raises0 bad_opcode "unknown pickle opcode 0xff at byte 2" "$tmp/badop.nbi"
raises0 bad_huge_frame "FRAME at byte 2 announces" "$tmp/hugeframe.nbi"
raises0 bad_huge_string "truncated string" "$tmp/hugestr.nbi"
printf 'x' >"$tmp/notnb.bin"
check_exit2 bad_not_numba "not a numba index (.nbi)" "$tmp/notnb.bin"
check_exit2 args_none "usage:"
check_exit2 args_unknown_option "unknown option '--frobnicate'" --frobnicate "$tmp/empty.nbi"
check_exit2 args_missing_value "--cpu needs a value" "$tmp/empty.nbi" --cpu
check_exit2 args_two_files "one FILE or DIR only" "$tmp/empty.nbi" "$tmp/text.nbi"
check_exit2 args_missing_file "No such file" "$tmp/does-not-exist.nbi"
mkdir -p "$tmp/emptydir"
check_exit2 args_directory "not a kcache store (no config.file, e/ or i/)" "$tmp/emptydir"
if run args_help --help; then
    [ "$rc" = 0 ] && grep -q -F -- "--features" <<<"$out" && ok args_help || fail args_help "status $rc"
fi

# a .nbc (numba's data file) given where the index belongs: the message names the .nbi to pass (issue 28)
nbc=$(find "$root/tests/data" -name '*.[0-9].nbc' | head -1)
if [ -n "$nbc" ] && run args_nbc_names_its_nbi "$nbc"; then
    want="kcache-inspect ${nbc%.[0-9].nbc}.nbi"
    if [ "$rc" = 2 ] && grep -q -F -- "$want" "$tmp/err" && grep -q 'numba data file (.nbc)' "$tmp/err"; then ok args_nbc_names_its_nbi
    else fail args_nbc_names_its_nbi "status $rc: $(head -c 300 "$tmp/err")"; fi
fi

[ "$failures" = 0 ]
