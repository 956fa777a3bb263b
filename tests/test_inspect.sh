#!/usr/bin/env bash
# test_inspect.sh - checks kcache-inspect's numba mode against real numba cache files.
#
# Usage: tests/test_inspect.sh [TOOL]          (default: build/kcache-inspect)
# Prints one line per check, "ok NAME" or "FAIL NAME: why" (the tests/kt.h protocol), and
# exits non-zero when any check failed.
#
# Needs: python3 (JSON checks, mutations), /usr/bin/python3 with Debian's python3-numba
# (numba 0.56), and scripts/numba-venv.sh's build/venv-numba (numba >= 0.60 from PyPI; made
# here when missing -- when it cannot be made, that is a FAIL, not a skip).  The shared
# corpus is read from $KCACHE_CORPUS, else ../shared/corpus/numba or shared/corpus/numba
# beside the repository.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tool=${1:-$root/build/kcache-inspect}
case "$tool" in /*) ;; *) tool=$PWD/$tool ;; esac
failures=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kcache-inspect-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
unset NUMBA_CPU_NAME NUMBA_CPU_FEATURES

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
# has NAME PATTERN: $out contains the fixed string PATTERN
has() { if grep -q -F -- "$2" <<<"$out"; then return 0; fi; fail "$1" "output lacks '$2'"; return 1; }
# verdict NAME CODE: --json's verdict.code is CODE (and the JSON parses)
json_get() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$tmp/out" "$1" 2>/dev/null; }

if [ ! -x "$tool" ]; then
    fail tool_exists "$tool is not an executable (build it first)"
    exit 1
fi

# ----------------------------------------------------------------------------------------------
# the shared corpus (numba 0.56.4), mtimes restored from MANIFEST.json
corpus=${KCACHE_CORPUS:-}
for c in "$root/../shared/corpus/numba" "$root/shared/corpus/numba"; do
    [ -z "$corpus" ] && [ -f "$c/MANIFEST.json" ] && corpus=$c
done
if [ -z "$corpus" ]; then
    fail corpus_found "no shared/corpus/numba beside the repository (set KCACHE_CORPUS)"
else
    cp -R "$corpus" "$tmp/corpus" && chmod -R u+w "$tmp/corpus"
    restored=1
    while read -r case src ns; do
        touch -d "@${ns:0:${#ns}-9}.${ns: -9}" "$tmp/corpus/$case/$src" || restored=0
    done < <(python3 -c 'import json,sys
for k, v in json.load(open(sys.argv[1])).items(): print(k, v["source"], v["source_mtime_ns"])' "$corpus/MANIFEST.json")
    [ "$restored" = 1 ] && ok corpus_mtimes_restored || fail corpus_mtimes_restored "touch failed"
    idx() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]]["index"])' "$corpus/MANIFEST.json" "$1"; }
    simple=$tmp/corpus/simple/$(idx simple); twocpu=$tmp/corpus/twocpu/$(idx twocpu); stale=$tmp/corpus/stale/$(idx stale)

    # the first overload's CPU and features: the machine that made the corpus (a znver3)
    run corpus_features --json "$simple" && zfeat=$(json_get 'd["overloads"][0]["features"]')
    zcpu=$(json_get 'd["overloads"][0]["cpu"]')
    [ "$zcpu" = znver3 ] && [ -n "$zfeat" ] && ok corpus_features || fail corpus_features "cpu '$zcpu'"

    # simple: hit for all three overloads with their three signatures
    if run corpus_simple --cpu znver3 --features "$zfeat" "$simple"; then
        has corpus_simple "numba      0.56.4" && has corpus_simple "(int64, int64)" &&
        has corpus_simple "(float64, float64)" && has corpus_simple "(array(int64, 1d, C), array(int64, 1d, C))" &&
        has corpus_simple "check    match" && has corpus_simple "verdict    hit: 3 of 3 overloads usable on this CPU (znver3)" &&
        [ "$rc" = 0 ] && ok corpus_simple
    fi
    # without --cpu/--features the host CPU is detected (kcache.h's detector, LLVM's names): the
    # name must be the one LLVM gives this machine (Debian's llvmlite, when it is installed)
    llvm_cpu=$(/usr/bin/python3 -c 'import llvmlite.binding as ll; print(ll.get_host_cpu_name())' 2>/dev/null)
    if run corpus_simple_detected "$simple"; then
        if [ -n "$llvm_cpu" ]; then
            has corpus_simple_detected "host CPU   $llvm_cpu (detected), features from detected" &&
            if [ "$llvm_cpu" = znver3 ]; then has corpus_simple_detected "verdict    hit: 3 of 3 overloads usable on this CPU (znver3)"
            else has corpus_simple_detected "verdict    miss: 0 of 3 overloads match this CPU ($llvm_cpu; index has znver3)"; fi &&
            [ "$rc" = 0 ] && ok corpus_simple_detected
        else
            has corpus_simple_detected "(detected), features from detected" && [ "$rc" = 0 ] && ok corpus_simple_detected
        fi
    fi
    if run corpus_simple_json --json --cpu znver3 --features "$zfeat" "$simple"; then
        v=$(json_get '(d["verdict"]["code"], d["verdict"]["usable"], d["stamp"]["matches"], [o["signature"] for o in d["overloads"]])')
        [ "$v" = "('hit', 3, True, ['(int64, int64)', '(float64, float64)', '(array(int64, 1d, C), array(int64, 1d, C))'])" ] &&
            ok corpus_simple_json || fail corpus_simple_json "got $v"
    fi

    # twocpu: two overloads differing only in CPU name and features; the default CPU uses the first
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
    if run corpus_stale "$stale"; then
        has corpus_stale "MISMATCH: mtime differs by +0.425 s, size differs (source 117, index 94)" &&
        has corpus_stale "verdict    stamp mismatch: mod.py mtime differs by +0.425 s, size differs (source 117, index 94) -> all 1 overloads discarded, inc recompiles" &&
        [ "$rc" = 0 ] && ok corpus_stale
    fi
    if run corpus_stale_json --json "$stale"; then
        v=$(json_get '(d["verdict"]["code"], d["stamp"]["kind"], d["stamp"]["size"], d["stamp"]["source_size"], d["stamp"]["matches"])')
        [ "$v" = "('stale', 'mtime-size', 94, 117, False)" ] && ok corpus_stale_json || fail corpus_stale_json "got $v"
    fi
    # the corpus was copied: the cache subdirectory's path hash says so, the source is found by name
    if run corpus_moved --json "$simple"; then
        v=$(json_get '(d["source"]["found_by"], "moved or copied" in d["source"]["note"], d["source"]["path"].endswith("/simple/mod.py"))')
        [ "$v" = "('NUMBA_CACHE_DIR layout, by directory name', True, True)" ] && ok corpus_moved || fail corpus_moved "got $v"
    fi
    # an explicit --source wins, and a touched source shows the mtime mismatch
    cp "$tmp/corpus/simple/mod.py" "$tmp/other.py"
    touch -d @1795352698.453644929 "$tmp/other.py"
    if run corpus_source_option --source "$tmp/other.py" "$simple"; then
        has corpus_source_option "found by: --source" &&
        has corpus_source_option "stamp mismatch: other.py mtime differs by +1.000 s, size same (167" && ok corpus_source_option
    fi
    # another numba version ignores the index
    if run corpus_version --numba-version 0.60.0 "$simple"; then
        has corpus_version "numba version differs (index 0.56.4, running 0.60.0)" && ok corpus_version
    fi
fi

# ----------------------------------------------------------------------------------------------
# fresh caches: Debian's numba 0.56 and the venv's numba >= 0.60
venv_py=$root/build/venv-numba/bin/python
if ! "$root/scripts/numba-venv.sh" >"$tmp/venv.log" 2>&1; then
    fail venv_numba "scripts/numba-venv.sh failed: $(tail -n 3 "$tmp/venv.log" | tr '\n' ' ')"
fi
for py in /usr/bin/python3 "$venv_py"; do
    tag=$(basename "$(dirname "$(dirname "$py")")")   # "usr" or "venv-numba"
    [ "$tag" = usr ] && tag=debian || tag=venv
    if ! "$py" -c 'import numba' >/dev/null 2>&1; then
        fail "fresh_${tag}_numba" "$py cannot import numba (Debian: apt-get install python3-numba; venv: scripts/numba-venv.sh)"
        continue
    fi
    ver=$("$py" -c 'import numba; print(numba.__version__)')
    out_dir=$tmp/fresh-$tag
    if ! python3 "$root/tests/make_nbi.py" "$py" "$out_dir" >"$tmp/make.log" 2>&1; then
        fail "fresh_${tag}_make" "make_nbi.py failed: $(tail -n 5 "$tmp/make.log" | tr '\n' ' ')"
        continue
    fi
    ok "fresh_${tag}_make_numba_$ver"
    # this machine's CPU as numba sees it (the tool itself never runs Python)
    hcpu=$("$py" -c 'import llvmlite.binding as ll; print(ll.get_host_cpu_name())')
    hfeat=$("$py" -c 'from numba.core.codegen import get_host_cpu_features; print(get_host_cpu_features())')
    man=$out_dir/MANIFEST.json
    fidx() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]]["indexes"][0])' "$man" "$1"; }
    fsize() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]]["source_size"])' "$man" "$1"; }
    H=(--cpu "$hcpu" --features "$hfeat")
    n="fresh_${tag}"

    f=$out_dir/sigs/$(fidx sigs)
    if run "${n}_sigs" "${H[@]}" "$f"; then
        has "${n}_sigs" "numba      $ver" && has "${n}_sigs" "found by: NUMBA_CACHE_DIR layout: the directory hash matches" &&
        has "${n}_sigs" "[3] (complex128, complex128)" && has "${n}_sigs" "(array(float32, 2d, F), array(float32, 2d, F))" &&
        has "${n}_sigs" "(unicode_type, unicode_type)" && has "${n}_sigs" "verdict    hit: 5 of 5 overloads usable on this CPU ($hcpu)" &&
        ok "${n}_sigs"
    fi
    # the host as kcache.h detects it, compared with this numba's LLVM name by name: a hit
    if run "${n}_sigs_detected" "$f"; then
        has "${n}_sigs_detected" "host CPU   $hcpu (detected)" &&
        has "${n}_sigs_detected" "same as host name by name" &&
        has "${n}_sigs_detected" "verdict    hit: 5 of 5 overloads usable on this CPU ($hcpu)" && ok "${n}_sigs_detected"
    fi
    if run "${n}_sigs_json" --json "${H[@]}" "$f"; then
        v=$(json_get '(d["numba_version"], d["verdict"]["code"], len(d["overloads"]), all(o["data_exists"] for o in d["overloads"]), d["function"]["qualname"])')
        [ "$v" = "('$ver', 'hit', 5, True, 'combine')" ] && ok "${n}_sigs_json" || fail "${n}_sigs_json" "got $v"
    fi
    # a missing .nbc: that overload recompiles
    rm -f "$(dirname "$f")"/*.2.nbc
    if run "${n}_missing_nbc" "${H[@]}" "$f"; then
        has "${n}_missing_nbc" "(MISSING: numba recompiles this overload)" &&
        has "${n}_missing_nbc" "4 of 5 overloads usable on this CPU ($hcpu); 1 of 5 signatures compile on first call" && ok "${n}_missing_nbc"
    fi
    # a CPU with other features: nothing matches
    if run "${n}_other_cpu" --cpu "$hcpu" --features "+sse2" "$f"; then
        has "${n}_other_cpu" "miss: 0 of 5 overloads match this CPU ($hcpu; index has $hcpu, same name but other features)" && ok "${n}_other_cpu"
    fi

    f=$out_dir/generic/$(fidx generic)
    if run "${n}_generic" "${H[@]}" "$f"; then
        has "${n}_generic" "same signature as [1]; differs only in: CPU name, CPU features" &&
        has "${n}_generic" "hit: 1 of 2 overloads usable on this CPU ($hcpu): [1];" && ok "${n}_generic"
    fi
    if NUMBA_CPU_NAME=generic run "${n}_generic_env" "$f"; then
        has "${n}_generic_env" "hit: 1 of 2 overloads usable on this CPU (generic): [2];" && ok "${n}_generic_env"
    fi

    f=$out_dir/stale/$(fidx stale)
    if run "${n}_stale" --json "${H[@]}" "$f"; then
        v=$(json_get '(d["verdict"]["code"], d["stamp"]["kind"], d["stamp"]["matches"], d["stamp"].get("size"), d["stamp"].get("source_size"), d["stamp"].get("mtime_diff_s"))')
        case "$v" in
        "('stale', 'mtime-size', False, "*", $(fsize stale), 1.0)") ok "${n}_stale" ;;
        "('stale', 'sha256', False, None, None, None)") ok "${n}_stale" ;;
        *) fail "${n}_stale" "got $v" ;;
        esac
    fi
    if run "${n}_stale_text" "${H[@]}" "$f"; then
        has "${n}_stale_text" "all 1 overloads discarded, inc recompiles" && ok "${n}_stale_text"
    fi

    # touched, content unchanged: numba <= 0.67 recompiles (mtime), >= 0.68 hits (content hash)
    f=$out_dir/touched/$(fidx touched)
    if run "${n}_touched" --json "${H[@]}" "$f"; then
        v=$(json_get '(d["stamp"]["kind"], d["verdict"]["code"], d["stamp"].get("mtime_diff_s"))')
        case "$v" in
        "('mtime-size', 'stale', 2.5)") ok "${n}_touched" ;;
        "('sha256', 'hit', None)") ok "${n}_touched" ;;
        *) fail "${n}_touched" "got $v" ;;
        esac
        kind=$(json_get 'd["stamp"]["kind"]')
        if [ "$kind" = mtime-size ] && run "${n}_touched_text" "${H[@]}" "$f"; then
            has "${n}_touched_text" "mtime differs by +2.500 s, size same ($(fsize touched)" && ok "${n}_touched_text"
        fi
    fi

    f=$out_dir/closure/$(fidx closure)
    if run "${n}_closure" "${H[@]}" "$f"; then
        has "${n}_closure" "function   make.locals.addk (module mod, first line 5)" &&
        has "${n}_closure" "(captured values are part of the key)" && has "${n}_closure" "verdict    hit:" && ok "${n}_closure"
    fi
    f=$out_dir/parallel/$(fidx parallel)
    if run "${n}_parallel" "${H[@]}" "$f"; then
        has "${n}_parallel" "[1] (array(float64, 1d, C))" && has "${n}_parallel" "verdict    hit: 1 of 1" && ok "${n}_parallel"
    fi
    f=$out_dir/vectorize/$(fidx vectorize)
    if run "${n}_vectorize" "${H[@]}" "$f"; then
        has "${n}_vectorize" "[1] (float64, float64) -> float64" && has "${n}_vectorize" "[2] (int64, int64) -> int64" &&
        has "${n}_vectorize" "verdict    hit: 2 of 2" && ok "${n}_vectorize"
    fi
    f=$out_dir/intree/$(fidx intree)
    if run "${n}_intree" "${H[@]}" "$f"; then
        has "${n}_intree" "found by: __pycache__ parent" && has "${n}_intree" "verdict    hit: 1 of 1" && ok "${n}_intree"
    fi
    # the function moved down a line: numba will look for another index file
    { echo; cat "$out_dir/intree/mod.py"; } >"$tmp/moved.py"
    if run "${n}_moved_function" --source "$tmp/moved.py" "${H[@]}" "$f"; then
        has "${n}_moved_function" "note: tri now starts at line 5, not 4: numba will use mod.tri-5." && ok "${n}_moved_function"
    fi
    # every fresh index: --json parses
    bad=
    for f in $(find "$out_dir" -name '*.nbi'); do
        run "${n}_json_all" --json "$f" || { bad=1; continue; }
        python3 -m json.tool <"$tmp/out" >/dev/null 2>&1 || bad="$bad $f"
    done
    [ -z "$bad" ] && ok "${n}_json_all" || fail "${n}_json_all" "JSON did not parse for:$bad"
    cp -R "$out_dir" "$tmp/keep-$tag"
done

# ----------------------------------------------------------------------------------------------
# robustness: truncations, byte flips and the regression inputs never crash (exit 0 or 2)
seeds=()
[ -n "$corpus" ] && seeds+=("$simple" "$twocpu" "$stale")
for t in debian venv; do
    [ -d "$tmp/keep-$t" ] && while IFS= read -r f; do seeds+=("$f"); done < <(find "$tmp/keep-$t" -name '*.nbi' | sort | head -n 3)
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
check_exit2 bad_empty_file "empty file" "$tmp/empty.nbi"
check_exit2 bad_not_pickle "not a numba index" "$tmp/text.nbi"
check_exit2 bad_no_body "no index body" "$tmp/nobody.nbi"
check_exit2 bad_opcode "unknown pickle opcode 0xff at byte 2" "$tmp/badop.nbi"
check_exit2 bad_huge_frame "FRAME at byte 2 announces" "$tmp/hugeframe.nbi"
check_exit2 bad_huge_string "truncated string" "$tmp/hugestr.nbi"
check_exit2 args_none "usage:"
check_exit2 args_unknown_option "unknown option '--frobnicate'" --frobnicate "$tmp/empty.nbi"
check_exit2 args_missing_value "--cpu needs a value" "$tmp/empty.nbi" --cpu
check_exit2 args_two_files "one FILE or DIR only" "$tmp/empty.nbi" "$tmp/text.nbi"
check_exit2 args_missing_file "No such file" "$tmp/does-not-exist.nbi"
check_exit2 args_directory "not a kcache store (no config.file, e/ or i/)" "$tmp"
if run args_help --help; then
    [ "$rc" = 0 ] && grep -q -F -- "--features" <<<"$out" && ok args_help || fail args_help "status $rc"
fi

[ "$failures" = 0 ]
