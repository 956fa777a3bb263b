#!/usr/bin/env python3
"""inspect_corpus.py - kcache-inspect's verdicts against what real numba did (tests/test_inspect.sh).

Usage: inspect_corpus.py replay TOOL CORPUS TMP
       inspect_corpus.py live TOOL PYTHON TMP [--other PYTHON2] [--corpus CORPUS] [--env | --real]

replay: every case of every numba version in CORPUS (tests/data/numba-corpus/VERSION, made by
        tests/numba_cases.py) is copied under TMP, its files' mtimes put back (git keeps none)
        and a zip case's user-wide cache directory renamed for the archive's new path; then
        TOOL --json, told the recording machine's CPU (--cpu, --features: numba's own magic
        tuple there), must give the case's verdict, and that verdict must be what numba did.
live:   the cases are made now with PYTHON's numba (numba_cases.py, numba's behaviour recorded
        in a fresh process with NUMBA_DEBUG_CACHE=1), and TOOL --json, detecting this
        machine's CPU itself, must agree with numba; when CORPUS holds the same numba version,
        numba must still do what the corpus recorded (the corpus cannot drift from numba).
        --env: numba_cases.py's --env cases (the run's environment: locators, bytecode, exact
        CPU feature strings, zip imports, damaged indexes; tests/data/numba-env-corpus).
        --real: numba_cases.py's --real cases (tests/data/numba-real-corpus, issue 38).

Prints "ok NAME" / "FAIL NAME: why" lines (tests/kt.h's protocol); exit status 1 on a failure.
"""
import json
import os
import shutil
import subprocess
import sys
import hashlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numba_cases  # noqa: E402  (the cases and what numba's behaviour allows)

failures = 0


def ok(name):
    print("ok " + name)


def fail(name, why):
    global failures
    failures += 1
    print("FAIL %s: %s" % (name, why))


# what numba reads from its environment: the tool runs with the case's run, not the test's
RUN_VARS = ("NUMBA_CACHE_DIR", "NUMBA_CACHE_LOCATOR_CLASSES", "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "PYTHONOPTIMIZE",
            "PYTHONPATH", "PYTHONPYCACHEPREFIX", "XDG_CACHE_HOME")


def run_env(entry, root):
    """the environment numba ran the case in: the user-wide cache under ROOT/xdg (numba_cases.py
    sets XDG_CACHE_HOME so), and the case's own variables ({root} is where the case lies now)"""
    env = {k: v for k, v in os.environ.items() if k not in RUN_VARS}
    env["XDG_CACHE_HOME"] = os.path.join(root, "xdg")
    for k, v in (entry or {}).get("run_env", {}).items():
        env[k] = v.replace("{root}", root)
    return env


def inspect(tool, args, cwd, env=None):
    p = subprocess.run([tool, "--json"] + args, capture_output=True, text=True, cwd=cwd, env=env)
    if p.returncode != 0:
        return None, "exit status %d: %s" % (p.returncode, p.stderr.strip()[:300])
    try:
        return json.loads(p.stdout), None
    except ValueError as e:
        return None, "JSON does not parse: %s" % e


def check_case(tool, name, entry, root, extra, did):
    """TOOL on each of the case's indexes: its verdict, and that numba did what it says."""
    for ix in entry["indexes"]:
        label = name + ("" if len(entry["indexes"]) == 1 else "_" + ("guf" if os.path.basename(ix).startswith("guf-") else "kernel"))
        args = [a.replace("{root}", root) for a in entry["inspect_args"]]
        j, err = inspect(tool, extra + args + [ix], root, run_env(entry, root))
        if err:
            fail(label, err)
            continue
        code = j["verdict"]["code"]
        warns = [w["kind"] for w in j.get("warnings", [])]
        want_warn = entry.get("warning")
        outcomes = [o["outcome"] for o in did]
        why = []
        if code != entry["expect"]:
            why.append("verdict %s (%s), the case expects %s" % (code, j["verdict"]["text"][:200], entry["expect"]))
        if any(code not in numba_cases.COMPATIBLE[o] for o in outcomes):
            why.append("numba did %s, kcache-inspect says %s" % (outcomes, code))
        at = [o.get("raised_at") for o in did if o.get("raised_at")]
        if at and code == "raises" and j["verdict"].get("raises_at") not in at:
            why.append("numba raised at %s, kcache-inspect says at %s" % (at, j["verdict"].get("raises_at")))
        if want_warn and want_warn not in warns:
            why.append("no %s warning (warnings: %s)" % (want_warn, warns))
        if not want_warn and warns:
            why.append("unexpected warnings %s" % warns)
        if want_warn == "stale-dependency" and not any(o["results"] and o["fresh_result"] and o["results"][0] != o["fresh_result"] for o in did):
            why.append("numba's result was not stale (%s)" % did)
        if why:
            fail(label, "; ".join(why))
        else:
            ok(label)


def replay(tool, corpus, tmp):
    versions = sorted(d for d in os.listdir(corpus) if os.path.isfile(os.path.join(corpus, d, "cases.json")))
    if not versions:
        fail("corpus_present", "no %s/*/cases.json" % corpus)
        return
    ok("corpus_present_" + "_".join(versions))
    for v in versions:
        src = os.path.join(corpus, v)
        root = os.path.join(tmp, "replay-" + v)
        shutil.copytree(src, root, symlinks=True)
        with open(os.path.join(root, "cases.json")) as f:
            m = json.load(f)
        restored = 0
        for name, e in m["cases"].items():
            for rel, ns in e["mtimes"].items():
                p = os.path.join(root, rel)
                if os.path.exists(p):
                    os.utime(p, ns=(ns, ns))
                    restored += 1
            if "rehome" in e:  # the user-wide cache names the subdirectory for the archive's path
                d = os.path.join(root, e["rehome"]["dir"])
                arch = os.path.abspath(os.path.join(root, e["rehome"]["archive"]))
                new = os.path.join(os.path.dirname(d), "%s_%s" % (os.path.basename(arch),
                                                                  hashlib.sha1(arch.encode()).hexdigest()))
                if os.path.isdir(d) and d != new:
                    os.rename(d, new)
                    e["indexes"] = [os.path.relpath(os.path.join(new, os.path.basename(x)), root) for x in e["indexes"]]
                    for rel in list(e["mtimes"]):   # the renamed files keep their mtimes
                        if rel.startswith(e["rehome"]["dir"] + os.sep):
                            p = os.path.join(new, os.path.basename(rel))
                            os.utime(p, ns=(e["mtimes"][rel], e["mtimes"][rel]))
        host = ["--cpu", m["host"]["cpu"], "--features", m["host"]["features"]]
        print("# corpus %s: numba %s (LLVM %s), recorded on %s; %d mtimes restored" % (v, m["numba"], m["llvm"][0],
                                                                                    m["host"]["cpu"], restored))
        kinds = set()
        for name, e in sorted(m["cases"].items()):
            if "inconsistent" in e:
                fail("corpus_%s_%s" % (v, name), "recorded inconsistent: " + e["inconsistent"])
                continue
            check_case(tool, "corpus_%s_%s" % (v, name), e, root, host, e["numba_did"])
            kinds.add(e["expect"])
            if e.get("warning"):
                kinds.add(e["warning"])
        if m.get("set") in ("env", "real"):   # numba_cases.py --env, --real: chosen cases, not every verdict kind
            continue
        # every verdict kind this numba can produce has a case
        need = {"hit", "partial", "stale", "cpu-mismatch", "raises", "never-read", "version-mismatch", "stale-dependency"}
        if not m.get("other_numba"):  # made where only one numba was (--other not given): no other version's index
            need.discard("version-mismatch")
            print("# corpus %s: made without another numba (no --other), so it has no version-mismatch case" % v)
        missing = need - kinds
        if missing:
            fail("corpus_%s_every_verdict_kind" % v, "no case for %s" % sorted(missing))
        else:
            ok("corpus_%s_every_verdict_kind" % v)


def live(tool, python, tmp, other, corpus, env_set=False, real_set=False):
    kind = "env-" if env_set else "real-" if real_set else ""
    out = os.path.join(tmp, "live-" + kind + os.path.basename(os.path.dirname(os.path.dirname(python))))
    cmd = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "numba_cases.py"), python, out,
           "--env" if env_set else "--real" if real_set else "--extra"]
    if other:
        cmd += ["--other", other]
    p = subprocess.run(cmd, capture_output=True, text=True)
    tag = "live"
    m = None
    try:
        with open(os.path.join(out, "cases.json")) as f:
            m = json.load(f)
        tag = "live_" + kind.replace("-", "_") + m["numba"]
    except (OSError, ValueError):
        pass
    if p.returncode != 0 or m is None:
        fail(tag + "_cases", "numba_cases.py failed (%d): %s" % (p.returncode, (p.stderr or p.stdout).strip()[-600:]))
        if m is None:
            return
    else:
        ok(tag + "_cases_%d" % len(m["cases"]))
    # this machine's CPU as that numba names it, detected by kcache-inspect without help
    hit = m["cases"].get("hit")
    if hit:
        j, err = inspect(tool, hit["indexes"], out, run_env(hit, out))
        if err:
            fail(tag + "_host_cpu", err)
        elif j["host"]["cpu"] != m["host"]["cpu"]:
            fail(tag + "_host_cpu", "kcache-inspect says numba %s names this CPU %s; numba says %s (detected %s, LLVM %s: %s)" % (
                m["numba"], j["host"]["cpu"], m["host"]["cpu"], j["host"]["detected_cpu"], m["llvm"][0],
                j["host"]["numba_llvm"]))
        else:
            ok("%s_host_cpu_%s" % (tag, m["host"]["cpu"]))
    recorded = None
    if corpus and os.path.isfile(os.path.join(corpus, m["numba"], "cases.json")):
        with open(os.path.join(corpus, m["numba"], "cases.json")) as f:
            recorded = json.load(f)
    for name, e in sorted(m["cases"].items()):
        check_case(tool, "%s_%s" % (tag, name), e, out, [], e["numba_did"])
        if recorded and name in recorded["cases"]:
            was = [o["outcome"] for o in recorded["cases"][name]["numba_did"]]
            now = [o["outcome"] for o in e["numba_did"]]
            if was != now:
                fail("%s_%s_as_recorded" % (tag, name), "numba %s now does %s, the corpus recorded %s" % (m["numba"], now, was))
            else:
                ok("%s_%s_as_recorded" % (tag, name))
    if corpus and not recorded:
        print("# %s: the corpus holds no numba %s: compared with numba itself only" % (tag, m["numba"]))


def main(argv):
    if len(argv) >= 5 and argv[1] == "replay":
        replay(os.path.abspath(argv[2]), os.path.abspath(argv[3]), os.path.abspath(argv[4]))
    elif len(argv) >= 5 and argv[1] == "live":
        rest = argv[5:]
        other = corpus = None
        if "--other" in rest:
            other = rest[rest.index("--other") + 1]
        if "--corpus" in rest:
            corpus = os.path.abspath(rest[rest.index("--corpus") + 1])
        live(os.path.abspath(argv[2]), argv[3], os.path.abspath(argv[4]), other, corpus, "--env" in rest, "--real" in rest)
    else:
        sys.stderr.write(__doc__)
        return 2
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
