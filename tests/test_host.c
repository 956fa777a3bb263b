/* test_host.c - the host magic tuple (OS/arch, CPU name, CPU features) against LLVM's own view
 * of this machine, through llvmlite, plus the decoders on made-up inputs and truncation safety.
 *
 * The CPU name is kcache's one name, the newest LLVM's (KCACHE__LLVM_NEWEST): it is compared
 * with that LLVM when llvmlite has it, and checked on made-up CPUIDs (test_x86_names).  What
 * older LLVMs call a CPU is kcache-inspect's (tools/inspect_llvm.c): tests/test_inspect_llvm.c
 * checks its tables, tests/test_inspect.sh its answers against those LLVMs.
 *
 * Build: cc -std=c99 -I<dir with kcache.h> tests/test_host.c   (POSIX: popen)
 * Needs /usr/bin/python3 with llvmlite (Debian: python3-numba or python3-llvmlite); without it
 * the comparison checks FAIL, they do not skip.  build/venv-numba/bin/python (PyPI's newest
 * llvmlite, scripts/numba-venv.sh) is compared too when it exists. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* popen, pclose */
#endif
#define KCACHE_IMPLEMENTATION
#define KCACHE__HOST_TEST_ARM 1 /* also build the ARM MIDR/HWCAP decoders, to check them here */
#include "kcache.h"
#include "kt.h"

#include <time.h>
#if !defined(_WIN32)
#include <unistd.h> /* access */
#endif

#ifndef LLVM_PY /* -DLLVM_PY=... points the test at another interpreter */
#define LLVM_PY "/usr/bin/python3"
#endif
#define LLVM_VENV_PY "build/venv-numba/bin/python"
/* prints the LLVM major version, the host CPU name and its features, one a line */
#define LLVM_ASK                                                                    \
    " -c '\n"                                                                       \
    "import llvmlite.binding as ll\n"                                               \
    "try:\n"                                                                        \
    "    ll.initialize()\n"                                                         \
    "except Exception:\n"                                                           \
    "    pass\n"                                                                    \
    "ll.initialize_native_target()\n"                                               \
    "print(ll.llvm_version_info[0])\n"                                              \
    "print(ll.get_host_cpu_name())\n"                                               \
    "print(ll.get_host_cpu_features().flatten())\n"                                 \
    "' 2>&1"

/* ---- small helpers ---------------------------------------------------------------------- */

typedef struct item { char sign; char name[64]; } item;

/* Splits "+a,-b" into items; returns the count, or -1 when an item is malformed. */
static int split_features(const char *s, item *out, int max)
{
    int n = 0;
    while (*s) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        if (len < 2 || (s[0] != '+' && s[0] != '-') || len - 1 >= sizeof out[0].name || n >= max)
            return -1;
        out[n].sign = s[0];
        memcpy(out[n].name, s + 1, len - 1);
        out[n].name[len - 1] = '\0';
        n++;
        if (!end) break;
        s = end + 1;
        if (!*s) return -1; /* trailing comma */
    }
    return n;
}

static int valid_name(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '.' || *s == '-'))
            return 0;
    return 1;
}

static const item *find_item(const item *v, int n, const char *name)
{
    int i;
    for (i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0) return &v[i];
    return NULL;
}

static int has_token(const char *list, const char *tok)
{
    size_t n = strlen(tok);
    const char *p = list;
    while ((p = strstr(p, tok)) != NULL) {
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) return 1;
        p += n;
    }
    return 0;
}

/* An LLVM's answer (through one interpreter's llvmlite), asked once. */
typedef struct llvm_answer {
    int state; /* 0 not asked, 1 ok, -1 failed */
    unsigned major;
    char name[128];
    char features[8192];
    char error[1024];
} llvm_answer;

static llvm_answer debian_llvm, venv_llvm;
/* Debian's llvmlite: the comparisons need it */
#define llvm_name (debian_llvm.name)
#define llvm_features (debian_llvm.features)
#define llvm_error (debian_llvm.error)

static int ask_llvm_py(const char *py, llvm_answer *a)
{
    FILE *p;
    char buf[16384], cmd[512];
    size_t n = 0, got;
    int status;
    char *nl, *first, *last, *mid;
    if (a->state) return a->state > 0;
    a->state = -1;
    snprintf(cmd, sizeof cmd, "%s%s", py, LLVM_ASK);
    p = popen(cmd, "r");
    if (!p) {
        snprintf(a->error, sizeof a->error, "popen failed");
        return 0;
    }
    while (n < sizeof buf - 1 && (got = fread(buf + n, 1, sizeof buf - 1 - n, p)) > 0) n += got;
    buf[n] = '\0';
    status = pclose(p);
    for (nl = buf; *nl; nl++) /* keep a FAIL message on one line */
        if (*nl == '\r') *nl = ' ';
    if (status != 0) {
        for (nl = buf; *nl; nl++)
            if (*nl == '\n') *nl = '|';
        snprintf(a->error, sizeof a->error, "%s/llvmlite failed (status %d): %.900s", py, status,
                 buf);
        return 0;
    }
    /* The answer is the last three lines (warnings on stderr may come first). */
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) buf[--n] = '\0';
    last = strrchr(buf, '\n');
    if (!last) {
        snprintf(a->error, sizeof a->error, "unexpected output: %.900s", buf);
        return 0;
    }
    *last = '\0';
    mid = strrchr(buf, '\n');
    if (!mid) {
        snprintf(a->error, sizeof a->error, "unexpected output: %.900s", buf);
        return 0;
    }
    *mid = '\0';
    first = strrchr(buf, '\n');
    first = first ? first + 1 : buf;
    a->major = (unsigned)strtoul(first, NULL, 10);
    kcache__host_copy(a->name, sizeof a->name, mid + 1);
    kcache__host_copy(a->features, sizeof a->features, last + 1);
    a->state = a->major > 0 ? 1 : -1;
    if (a->state < 0) snprintf(a->error, sizeof a->error, "no LLVM version in: %.900s", first);
    return a->state > 0;
}

static int ask_llvm(void) { return ask_llvm_py(LLVM_PY, &debian_llvm); }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- checks against this machine -------------------------------------------------------- */

static void test_os_arch(void)
{
    char s[KCACHE__HOST_OS_ARCH_MAX];
    const char *dash;
    kcache__host_os_arch(s, sizeof s);
    printf("# os_arch: %s\n", s);
    dash = strchr(s, '-');
    KT_CHECK_MSG(dash && dash != s && dash[1] && !strchr(s, ' '), "malformed os_arch \"%s\"", s);
#if defined(__linux__) && defined(__x86_64__) && !defined(__ILP32__)
    KT_CHECK_STR(s, "linux-x86_64");
#elif defined(__linux__) && defined(__aarch64__)
    KT_CHECK_STR(s, "linux-aarch64");
#endif
}

/* kcache's name for this CPU against the LLVM whose names it gives (KCACHE__LLVM_NEWEST): PyPI's
 * newest, when scripts/numba-venv.sh made it.  Another LLVM (Debian's) is only reported: what
 * older LLVMs call this CPU is kcache-inspect's, compared with them by tests/test_inspect.sh. */
static void compare_with_llvm(const char *py, const llvm_answer *a)
{
    char stable[KCACHE__HOST_NAME_MAX];
    kcache__host_cpu_name(stable, sizeof stable);
    printf("# cpu name: LLVM %u (%s) \"%s\"; ours (LLVM %d's) \"%s\"%s\n", a->major, py, a->name, KCACHE__LLVM_NEWEST,
           stable, a->major == KCACHE__LLVM_NEWEST ? "" : " (not compared: another LLVM)");
    if (a->major == KCACHE__LLVM_NEWEST) KT_CHECK_STR(stable, a->name);
}

static void test_cpu_name_matches_llvm(void)
{
    if (!ask_llvm()) {
        KT_FAILF("cannot ask LLVM (llvmlite): %s", llvm_error);
        return;
    }
    compare_with_llvm(LLVM_PY, &debian_llvm);
    if (access(LLVM_VENV_PY, X_OK) == 0) {
        if (ask_llvm_py(LLVM_VENV_PY, &venv_llvm)) compare_with_llvm(LLVM_VENV_PY, &venv_llvm);
        else KT_FAILF("%s exists but cannot answer: %s", LLVM_VENV_PY, venv_llvm.error);
    } else {
        printf("# cpu name: no %s (scripts/numba-venv.sh makes it): compared with Debian's LLVM only\n", LLVM_VENV_PY);
    }
}

static void test_features_format(void)
{
    static char a[KCACHE__HOST_FEATURES_MAX], b[KCACHE__HOST_FEATURES_MAX];
    static item v[400];
    size_t na, nb;
    int n, i;
    na = kcache__host_cpu_features(a, sizeof a);
    nb = kcache__host_cpu_features(b, sizeof b);
    printf("# features (%u chars): %s\n", (unsigned)na, a);
    KT_CHECK_EQ_U64(na, strlen(a));
    KT_CHECK(na + 1 < sizeof a); /* the whole string fit, with room to spare */
    KT_CHECK_MSG(na == nb && strcmp(a, b) == 0, "two calls disagree");
    n = split_features(a, v, (int)(sizeof v / sizeof v[0]));
    KT_CHECK_MSG(n >= 0, "malformed feature string");
#if defined(KCACHE__HOST_X86) || defined(__aarch64__)
    KT_CHECK_MSG(n > 20, "only %d features", n);
#endif
    for (i = 0; i < n; i++) {
        KT_CHECK_MSG(valid_name(v[i].name), "bad feature name \"%s\"", v[i].name);
        if (i > 0)
            KT_CHECK_MSG(strcmp(v[i - 1].name, v[i].name) < 0, "not sorted/unique: %s then %s",
                         v[i - 1].name, v[i].name);
    }
}

/* Our feature string against one LLVM's: every feature both name must have the same sign, and
 * on x86 kcache must name every feature that LLVM names (elsewhere most of them). */
static void compare_features_with_llvm(const char *py, const llvm_answer *a)
{
    static char ours[KCACHE__HOST_FEATURES_MAX];
    static item o[400], l[400];
    int no, nl, i, common = 0, agree = 0, onlyours = 0;
    kcache__host_cpu_features(ours, sizeof ours);
    no = split_features(ours, o, 400);
    nl = split_features(a->features, l, 400);
    KT_CHECK_MSG(no >= 0, "our string is malformed");
    KT_CHECK_MSG(nl >= 0, "LLVM %u's string is malformed: %s", a->major, a->features);
    if (no < 0 || nl < 0) return;
    for (i = 0; i < no; i++) {
        const item *m = find_item(l, nl, o[i].name);
        if (!m) {
            onlyours++;
            continue;
        }
        common++;
        if (m->sign == o[i].sign) agree++;
        else KT_FAILF("feature %s: ours %c, LLVM %u (%s) %c", o[i].name, o[i].sign, a->major, py, m->sign);
    }
    printf("# features vs LLVM %u (%s): ours %d, LLVM %d, both %d, signs agree %d, only ours %d\n",
           a->major, py, no, nl, common, agree, onlyours);
    printf("# only ours:");
    for (i = 0; i < no; i++)
        if (!find_item(l, nl, o[i].name)) printf(" %c%s", o[i].sign, o[i].name);
    printf("\n# only LLVM %u's:", a->major);
    for (i = 0; i < nl; i++)
        if (!find_item(o, no, l[i].name)) printf(" %c%s", l[i].sign, l[i].name);
    printf("\n");
#if defined(KCACHE__HOST_X86)
    KT_CHECK_MSG(nl > 0 && common == nl, "we cover only %d of LLVM %u's %d features (see \"only LLVM %u's\")",
                 common, a->major, nl, a->major);
#else
    KT_CHECK_MSG(nl > 0 && common * 10 >= nl * 9, "we cover only %d of LLVM %u's %d features",
                 common, a->major, nl);
#endif
}

/* Debian's llvmlite (it must be there) and, when scripts/numba-venv.sh made it, PyPI's newest. */
static void test_features_match_llvm(void)
{
    if (!ask_llvm()) {
        KT_FAILF("cannot ask LLVM (llvmlite): %s", llvm_error);
        return;
    }
    compare_features_with_llvm(LLVM_PY, &debian_llvm);
    if (access(LLVM_VENV_PY, X_OK) == 0) {
        if (ask_llvm_py(LLVM_VENV_PY, &venv_llvm)) compare_features_with_llvm(LLVM_VENV_PY, &venv_llvm);
        else KT_FAILF("%s exists but cannot answer: %s", LLVM_VENV_PY, venv_llvm.error);
    } else {
        printf("# features: no %s (scripts/numba-venv.sh makes it): compared with Debian's LLVM only\n", LLVM_VENV_PY);
    }
}

/* Every cap from 0 to past the full length: NUL-terminated inside cap, nothing written past
 * cap, a prefix of the full string ending at an item boundary, and as long as fits. */
static void test_truncation(void)
{
    static char full[KCACHE__HOST_FEATURES_MAX];
    char name[KCACHE__HOST_NAME_MAX], osa[KCACHE__HOST_OS_ARCH_MAX];
    size_t n = kcache__host_cpu_features(full, sizeof full), cap, k;
    const size_t guard = 16;
    int bad = 0;

    KT_CHECK_EQ_U64(kcache__host_cpu_features(NULL, 0), 0);
    for (cap = 0; cap <= n + 2 && !bad; cap++) {
        unsigned char *buf = (unsigned char *)malloc(cap + guard);
        size_t r;
        if (!buf) break;
        memset(buf, 0x5a, cap + guard);
        r = kcache__host_cpu_features((char *)buf, cap);
        for (k = cap; k < cap + guard; k++)
            if (buf[k] != 0x5a) bad = 1;
        KT_CHECK_MSG(!bad, "features: wrote past cap %u", (unsigned)cap);
        if (cap == 0) {
            KT_CHECK_MSG(r == 0 && buf[0] == 0x5a, "features: cap 0 wrote or returned %u",
                         (unsigned)r);
        } else {
            const char *s = (const char *)buf;
            int ok = r < cap && s[r] == '\0' && strlen(s) == r && memcmp(s, full, r) == 0 &&
                     (r == 0 || full[r] == ',' || full[r] == '\0');
            if (ok && r < n) { /* the next item must really not fit */
                const char *next = full + r + (r ? 1 : 0);
                const char *end = strchr(next, ',');
                size_t itemlen = end ? (size_t)(end - next) : strlen(next);
                ok = r + (r ? 1 : 0) + itemlen + 1 > cap;
            }
            if (!ok) bad = 1;
            KT_CHECK_MSG(ok, "features: cap %u gave %u \"%s\"", (unsigned)cap, (unsigned)r, s);
        }
        free(buf);
    }

    kcache__host_cpu_name(name, sizeof name);
    kcache__host_os_arch(osa, sizeof osa);
    for (k = 0; k < 2; k++) {
        const char *want = k ? osa : name;
        size_t len = strlen(want);
        for (cap = 0; cap <= len + 2; cap++) {
            unsigned char *buf = (unsigned char *)malloc(cap + guard);
            size_t j;
            int ok = 1;
            if (!buf) break;
            memset(buf, 0x5a, cap + guard);
            if (k) kcache__host_os_arch((char *)buf, cap);
            else kcache__host_cpu_name((char *)buf, cap);
            for (j = cap; j < cap + guard; j++)
                if (buf[j] != 0x5a) ok = 0;
            if (cap == 0) ok = ok && buf[0] == 0x5a;
            else {
                size_t want_len = len < cap - 1 ? len : cap - 1;
                ok = ok && strlen((const char *)buf) == want_len &&
                     memcmp(buf, want, want_len) == 0;
            }
            KT_CHECK_MSG(ok, "%s: cap %u", k ? "os_arch" : "cpu_name", (unsigned)cap);
            free(buf);
        }
    }
    kcache__host_cpu_name(NULL, 0);
    kcache__host_os_arch(NULL, 0);
}

static void test_cost(void)
{
    static char f[KCACHE__HOST_FEATURES_MAX];
    char name[KCACHE__HOST_NAME_MAX];
    int i, reps = 200;
    double t0 = now_s(), t1, t2;
    for (i = 0; i < reps; i++) kcache__host_cpu_name(name, sizeof name);
    t1 = now_s();
    for (i = 0; i < reps; i++) kcache__host_cpu_features(f, sizeof f);
    t2 = now_s();
    printf("# cost per call: cpu_name %.1f us, cpu_features %.1f us\n",
           (t1 - t0) / reps * 1e6, (t2 - t1) / reps * 1e6);
    KT_CHECK(name[0] != '\0');
}

/* ---- x86 decoding on made-up CPUID values ------------------------------------------------ */
#if defined(KCACHE__HOST_X86)

static void x86_set(kcache__x86_info *x, const char *feat)
{
    size_t i;
    for (i = 0; i < KCACHE__X86_NFEATS; i++)
        if (strcmp(kcache__x86_feats[i].name, feat) == 0) {
            x->w[kcache__x86_feats[i].word] |= 1u << kcache__x86_feats[i].bit;
            return;
        }
    KT_FAILF("test asks for unknown feature %s", feat);
}

/* kcache's name (the newest LLVM's) for a made-up CPU; feats: space-separated names.  What older
   LLVMs call these CPUs is kcache-inspect's (tests/test_inspect_llvm.c). */
static const char *x86_name_of(unsigned vendor, unsigned family, unsigned model, const char *feats)
{
    static kcache__x86_info x;
    char buf[512], *tok;
    memset(&x, 0, sizeof x);
    x.vendor = vendor;
    x.family = family;
    x.model = model;
    x.avx_os = x.avx512_os = x.amx_os = 1;
    kcache__host_copy(buf, sizeof buf, feats);
    for (tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) x86_set(&x, tok);
    return kcache__x86_name(&x);
}

static void test_x86_names(void)
{
    const unsigned I = KCACHE__X86_INTEL, A = KCACHE__X86_AMD;
    const char *skx = "sse sse2 sse3 ssse3 sse4.1 sse4.2 avx avx2 avx512f avx512vl";
    KT_CHECK_STR(x86_name_of(I, 6, 0x0f, ""), "core2");
    KT_CHECK_STR(x86_name_of(I, 6, 0x1a, ""), "nehalem");
    KT_CHECK_STR(x86_name_of(I, 6, 0x2d, ""), "sandybridge");
    KT_CHECK_STR(x86_name_of(I, 6, 0x3f, ""), "haswell");
    KT_CHECK_STR(x86_name_of(I, 6, 0x4f, ""), "broadwell");
    KT_CHECK_STR(x86_name_of(I, 6, 0x9e, ""), "skylake");
    KT_CHECK_STR(x86_name_of(I, 6, 0x55, skx), "skylake-avx512");
    KT_CHECK_STR(x86_name_of(I, 6, 0x55, "avx512f avx512vl avx512vnni"), "cascadelake");
    KT_CHECK_STR(x86_name_of(I, 6, 0x55, "avx512f avx512vnni avx512bf16"), "cooperlake");
    KT_CHECK_STR(x86_name_of(I, 6, 0x6a, ""), "icelake-server");
    KT_CHECK_STR(x86_name_of(I, 6, 0xa7, ""), "rocketlake");
    KT_CHECK_STR(x86_name_of(I, 6, 0x8f, ""), "sapphirerapids");
    KT_CHECK_STR(x86_name_of(I, 6, 0xcf, ""), "emeraldrapids");
    KT_CHECK_STR(x86_name_of(I, 6, 0xad, ""), "graniterapids");
    KT_CHECK_STR(x86_name_of(I, 6, 0xae, ""), "graniterapids-d");
    KT_CHECK_STR(x86_name_of(I, 6, 0x97, ""), "alderlake");
    KT_CHECK_STR(x86_name_of(I, 6, 0x5c, ""), "goldmont");
    KT_CHECK_STR(x86_name_of(I, 6, 0x57, ""), "knl");
    KT_CHECK_STR(x86_name_of(I, 19, 0x01, ""), "diamondrapids");
    KT_CHECK_STR(x86_name_of(I, 18, 0x01, ""), "novalake");
    KT_CHECK_STR(x86_name_of(I, 6, 0xd5, ""), "wildcatlake");
    KT_CHECK_STR(x86_name_of(I, 6, 0xb7, ""), "raptorlake");
    /* unlisted family-6 models: LLVM's feature-based guess */
    KT_CHECK_STR(x86_name_of(I, 6, 0xfe, "avx512f avx512vl avx512vbmi avx512vbmi2"),
                 "icelake-client");
    KT_CHECK_STR(x86_name_of(I, 6, 0xfe, "avx512f avx512vp2intersect"), "tigerlake");
    KT_CHECK_STR(x86_name_of(I, 6, 0xfe, "avx avx2 adx"), "broadwell");
    KT_CHECK_STR(x86_name_of(I, 6, 0xfe, "avx avx2"), "haswell");
    KT_CHECK_STR(x86_name_of(I, 6, 0xfe, "clflushopt sha"), "goldmont");
    KT_CHECK_STR(x86_name_of(I, 6, 0xfe, "sse4.2 movbe"), "silvermont");
    KT_CHECK_STR(x86_name_of(I, 6, 0xfe, "ssse3"), "core2");
    KT_CHECK_STR(x86_name_of(I, 6, 0xfe, "sse sse2"), "pentium-m");
    KT_CHECK_STR(x86_name_of(I, 6, 0xfe, ""), "pentiumpro");
    KT_CHECK_STR(x86_name_of(I, 15, 0x06, "64bit sse3"), "nocona");
    KT_CHECK_STR(x86_name_of(I, 15, 0x03, "sse3"), "prescott");
    KT_CHECK_STR(x86_name_of(I, 5, 0x04, "mmx"), "pentium-mmx");
    KT_CHECK_STR(x86_name_of(I, 21, 0x00, ""), "generic");
    KT_CHECK_STR(x86_name_of(A, 15, 0x41, "sse3"), "k8-sse3");
    KT_CHECK_STR(x86_name_of(A, 16, 0x04, ""), "amdfam10");
    KT_CHECK_STR(x86_name_of(A, 20, 0x01, ""), "btver1");
    KT_CHECK_STR(x86_name_of(A, 21, 0x01, ""), "bdver1");
    KT_CHECK_STR(x86_name_of(A, 21, 0x02, ""), "bdver2");
    KT_CHECK_STR(x86_name_of(A, 21, 0x13, ""), "bdver2");
    KT_CHECK_STR(x86_name_of(A, 21, 0x30, ""), "bdver3");
    KT_CHECK_STR(x86_name_of(A, 21, 0x65, ""), "bdver4");
    KT_CHECK_STR(x86_name_of(A, 22, 0x30, ""), "btver2");
    KT_CHECK_STR(x86_name_of(A, 23, 0x01, ""), "znver1");
    KT_CHECK_STR(x86_name_of(A, 23, 0x18, ""), "znver1");
    KT_CHECK_STR(x86_name_of(A, 23, 0x31, ""), "znver2");
    KT_CHECK_STR(x86_name_of(A, 23, 0x71, ""), "znver2");
    KT_CHECK_STR(x86_name_of(A, 25, 0x01, ""), "znver3");
    KT_CHECK_STR(x86_name_of(A, 25, 0x21, ""), "znver3");
    KT_CHECK_STR(x86_name_of(A, 25, 0x11, ""), "znver4");
    KT_CHECK_STR(x86_name_of(A, 25, 0x61, ""), "znver4");
    KT_CHECK_STR(x86_name_of(A, 26, 0x44, ""), "znver5");
    KT_CHECK_STR(x86_name_of(A, 27, 0x00, ""), "generic");
    KT_CHECK_STR(x86_name_of(KCACHE__X86_OTHER, 6, 0x8f, "avx"), "generic");
}

/* AVX / AVX-512 / AMX features count only when the OS saves their registers. */
static void test_x86_os_state(void)
{
    static kcache__x86_info x;
    char s[KCACHE__HOST_FEATURES_MAX];
    memset(&x, 0, sizeof x);
    x86_set(&x, "avx");
    x86_set(&x, "fma");
    x86_set(&x, "xsave");
    x86_set(&x, "avx2");
    x86_set(&x, "avx512f");
    x86_set(&x, "amx-tile");
    x86_set(&x, "sse2");
    x86_set(&x, "bmi2");
    kcache__x86_features(&x, s, sizeof s);
    KT_CHECK(has_token(s, "-avx") && has_token(s, "-avx2") && has_token(s, "-fma"));
    KT_CHECK(has_token(s, "-xsave") && has_token(s, "-avx512f") && has_token(s, "-amx-tile"));
    KT_CHECK(has_token(s, "+sse2") && has_token(s, "+bmi2") && has_token(s, "-sse3"));
    x.avx_os = 1;
    kcache__x86_features(&x, s, sizeof s);
    KT_CHECK(has_token(s, "+avx") && has_token(s, "+avx2") && has_token(s, "+fma"));
    KT_CHECK(has_token(s, "+xsave") && has_token(s, "-avx512f") && has_token(s, "-amx-tile"));
    x.avx512_os = 1;
    x.amx_os = 1;
    kcache__x86_features(&x, s, sizeof s);
    KT_CHECK(has_token(s, "+avx512f") && has_token(s, "+amx-tile") && has_token(s, "-avx512bw"));
}

/* Checks each space-separated "+name"/"-name" of want in the features of x. */
static void x86_expect(const kcache__x86_info *x, const char *what, const char *want)
{
    char s[KCACHE__HOST_FEATURES_MAX], buf[1024], *tok;
    kcache__x86_features(x, s, sizeof s);
    kcache__host_copy(buf, sizeof buf, want);
    for (tok = strtok(buf, " "); tok; tok = strtok(NULL, " "))
        KT_CHECK_MSG(has_token(s, tok), "%s: no %s in %s", what, tok, s);
}

/* The names LLVM 18..22 added, on made-up CPUIDs and XCR0s (this machine has none of them): APX
 * needs CPUID.(7,1).EDX[21] and XCR0[19]; avx10.N needs CPUID.(7,1).EDX[19] and an AVX10 version
 * >= N in leaf 0x24's EBX[7:0] (-512: EBX[18] too); leaf 0x1E.1's AMX names need AMX state. */
static void test_x86_apx_avx10(void)
{
    static kcache__x86_info x;
    const uint64_t xcr0_avx512_amx = 0x6u | 0xe0u | 0x60000u, xcr0_apx = (uint64_t)1 << 19;
    memset(&x, 0, sizeof x);
    x.w[KCACHE__X86_1C] = (1u << 27) | (1u << 28); /* OSXSAVE, AVX */
    x.w[KCACHE__X86_71D] = (1u << 19) | (1u << 21); /* AVX10, APX_F */
    x.w[KCACHE__X86_71A] = 1u << 31;               /* MOVRS */
    x.w[KCACHE__X86_1E1A] = 0x1f0u;                /* leaf 0x1E.1 EAX[8:4] */
    x.w[KCACHE__X86_24B] = (1u << 18) | 2u;        /* AVX10.2, 512-bit vectors */
    /* the OS saves AVX-512 and AMX state but not APX's */
    kcache__x86_set_os(&x, xcr0_avx512_amx);
    KT_CHECK(x.avx512_os && x.amx_os && !x.apx_os);
    x86_expect(&x, "no APX state", "-egpr -push2pop2 -ppx -ndd -ccmp -nf -cf -zu +movrs");
    x86_expect(&x, "no APX state", "+avx10.1 +avx10.1-256 +avx10.1-512 +avx10.2");
    x86_expect(&x, "no APX state", "+amx-fp8 +amx-transpose +amx-tf32 +amx-avx512 +amx-movrs");
    /* with XCR0's APX bit */
    kcache__x86_set_os(&x, xcr0_avx512_amx | xcr0_apx);
    KT_CHECK(x.apx_os);
    x86_expect(&x, "APX state", "+egpr +push2pop2 +ppx +ndd +ccmp +nf +cf +zu");
    /* XCR0 says nothing without OSXSAVE (XGETBV is not even run then) */
    x.w[KCACHE__X86_1C] = 1u << 28;
    kcache__x86_set_os(&x, xcr0_avx512_amx | xcr0_apx);
    KT_CHECK(!x.avx_os && !x.amx_os && !x.apx_os);
    x86_expect(&x, "no OSXSAVE", "-egpr -zu -amx-fp8 -amx-movrs +movrs");
    x.w[KCACHE__X86_1C] = (1u << 27) | (1u << 28);
    /* APX state without the CPUID bit */
    x.w[KCACHE__X86_71D] = 1u << 19;
    kcache__x86_set_os(&x, xcr0_avx512_amx | xcr0_apx);
    x86_expect(&x, "no APX_F", "-egpr -push2pop2 -ppx -ndd -ccmp -nf -cf -zu +avx10.2");
    /* AVX10 version 1, 256-bit only */
    x.w[KCACHE__X86_24B] = 1u;
    x86_expect(&x, "AVX10.1/256", "+avx10.1 +avx10.1-256 -avx10.1-512 -avx10.2");
    /* the AVX10 bit with no version (leaf 0x24 missing reads as 0) */
    x.w[KCACHE__X86_24B] = 0;
    x86_expect(&x, "AVX10 no leaf 0x24", "-avx10.1 -avx10.1-256 -avx10.1-512 -avx10.2");
    /* a version without the AVX10 bit */
    x.w[KCACHE__X86_71D] = 0;
    x.w[KCACHE__X86_24B] = (1u << 18) | 3u;
    x86_expect(&x, "no AVX10 bit", "-avx10.1 -avx10.1-256 -avx10.1-512 -avx10.2");
    /* a later version counts as every earlier one */
    x.w[KCACHE__X86_71D] = 1u << 19;
    x86_expect(&x, "AVX10.3", "+avx10.1 +avx10.1-512 +avx10.2");
    /* leaf 0x1E's AMX names need the AMX state, and read their own bits */
    kcache__x86_set_os(&x, 0x6u | 0xe0u);
    x86_expect(&x, "no AMX state", "-amx-fp8 -amx-transpose -amx-tf32 -amx-avx512 -amx-movrs");
    kcache__x86_set_os(&x, xcr0_avx512_amx);
    x.w[KCACHE__X86_1E1A] = 1u << 6;
    x86_expect(&x, "only amx-tf32", "-amx-fp8 -amx-transpose +amx-tf32 -amx-avx512 -amx-movrs");
    x.w[KCACHE__X86_1E1A] = 0;
    x86_expect(&x, "no leaf 0x1E", "-amx-fp8 -amx-transpose -amx-tf32 -amx-avx512 -amx-movrs");
}

#if defined(__linux__)
/* The family and model we decode are the ones the kernel shows. */
static void test_x86_family_model(void)
{
    kcache__x86_info x;
    char line[512];
    unsigned fam = 0, model = 0;
    int got = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    kcache__x86_read(&x);
    if (!f) {
        KT_FAILF("cannot read /proc/cpuinfo");
        return;
    }
    while (got != 3 && fgets(line, sizeof line, f)) {
        const char *v;
        if ((v = kcache__arm_field(line, "cpu family")) != NULL && sscanf(v, "%u", &fam) == 1)
            got |= 1;
        else if ((v = kcache__arm_field(line, "model")) != NULL && *v >= '0' && *v <= '9' &&
                 sscanf(v, "%u", &model) == 1)
            got |= 2;
    }
    fclose(f);
    printf("# x86: vendor %u family %u model 0x%x (kernel: family %u model 0x%x)\n", x.vendor,
           x.family, x.model, fam, model);
    KT_CHECK(got == 3);
    KT_CHECK_EQ_U64(x.family, fam);
    KT_CHECK_EQ_U64(x.model, model);
}
#endif
#endif /* KCACHE__HOST_X86 */

/* ---- ARM decoding on made-up /proc/cpuinfo text and HWCAP words --------------------------- */

static const char *arm_name_of(const char *text)
{
    kcache__arm_scan s;
    char line[256];
    memset(&s, 0, sizeof s);
    while (*text) {
        const char *nl = strchr(text, '\n');
        size_t len = nl ? (size_t)(nl - text + 1) : strlen(text);
        if (len >= sizeof line) len = sizeof line - 1;
        memcpy(line, text, len);
        line[len] = '\0';
        kcache__arm_scan_line(&s, line);
        text += len;
    }
    return kcache__arm_scan_name(&s);
}

#define CPU(impl, var, part)                                                               \
    "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32\n" \
    "CPU implementer\t: " impl "\nCPU architecture: 8\nCPU variant\t: " var "\n"          \
    "CPU part\t: " part "\nCPU revision\t: 1\n\n"

static void test_arm_names(void)
{
    KT_CHECK_STR(arm_name_of(CPU("0x41", "0x3", "0xd0c") CPU("0x41", "0x3", "0xd0c")),
                 "neoverse-n1");
    KT_CHECK_STR(arm_name_of(CPU("0x41", "0x1", "0xd40")), "neoverse-v1");
    KT_CHECK_STR(arm_name_of(CPU("0x41", "0x0", "0xd4f")), "neoverse-v2");
    KT_CHECK_STR(arm_name_of(CPU("0x41", "0x0", "0xd49")), "neoverse-n2");
    KT_CHECK_STR(arm_name_of(CPU("0x41", "0x0", "0xd03")), "cortex-a53");
    KT_CHECK_STR(arm_name_of(CPU("0x41", "0x0", "0xd07")), "cortex-a57");
    KT_CHECK_STR(arm_name_of(CPU("0x41", "0x0", "0xd08")), "cortex-a72");
    /* big.LITTLE: the last part line counts, except for the X925 + A725 pair */
    KT_CHECK_STR(arm_name_of(CPU("0x41", "0x1", "0xd05") CPU("0x41", "0x4", "0xd0b")),
                 "cortex-a76");
    KT_CHECK_STR(arm_name_of(CPU("0x41", "0x0", "0xd85") CPU("0x41", "0x0", "0xd87")),
                 "cortex-x925");
    KT_CHECK_STR(arm_name_of(CPU("0x41", "0x0", "0xd87") CPU("0x41", "0x0", "0xd85")),
                 "cortex-x925");
    KT_CHECK_STR(arm_name_of(CPU("0x41", "0x0", "0xd05")
                             "Hardware\t: Qualcomm Technologies, Inc MSM8996\n"),
                 "cortex-a53");
    KT_CHECK_STR(arm_name_of(CPU("0x43", "0x1", "0x0af")), "thunderx2t99");
    KT_CHECK_STR(arm_name_of(CPU("0x42", "0x1", "0x516")), "thunderx2t99");
    KT_CHECK_STR(arm_name_of(CPU("0x43", "0x0", "0x0a1")), "thunderxt88");
    KT_CHECK_STR(arm_name_of(CPU("0x46", "0x1", "0x001")), "a64fx");
    KT_CHECK_STR(arm_name_of(CPU("0x48", "0x1", "0xd01")), "tsv110");
    KT_CHECK_STR(arm_name_of(CPU("0x51", "0xa", "0x801")), "cortex-a73");
    KT_CHECK_STR(arm_name_of(CPU("0x53", "0x1", "0x003")), "exynos-m4");
    KT_CHECK_STR(arm_name_of(CPU("0x53", "0x4", "0x002")), "exynos-m3");
    KT_CHECK_STR(arm_name_of(CPU("0x61", "0x1", "0x022")), "apple-m1");
    KT_CHECK_STR(arm_name_of(CPU("0x6d", "0x0", "0xd49")), "neoverse-n2");
    KT_CHECK_STR(arm_name_of(CPU("0xc0", "0x0", "0xac3")), "ampere1");
    KT_CHECK_STR(arm_name_of(CPU("0x41", "0x0", "0xfff")), "generic");
    KT_CHECK_STR(arm_name_of(CPU("0x99", "0x0", "0xd0c")), "generic");
    KT_CHECK_STR(arm_name_of("processor : 0\nvendor_id : GenuineIntel\n"), "generic");
    KT_CHECK_STR(arm_name_of(""), "generic");
}

static void test_arm_features(void)
{
    char s[KCACHE__HOST_FEATURES_MAX];
    item v[128];
    int n, i;
    /* Neoverse-N1-like: FP ASIMD AES PMULL SHA1 SHA2 CRC32 ATOMICS FPHP ASIMDHP ASIMDRDM LRCPC
     * DCPOP ASIMDDP SSBS */
    uint64_t hw1 = (1u << 0) | (1u << 1) | (1u << 3) | (1u << 4) | (1u << 5) | (1u << 6) |
                   (1u << 7) | (1u << 8) | (1u << 9) | (1u << 10) | (1u << 12) | (1u << 15) |
                   (1u << 16) | (1u << 20) | (1u << 28);
    kcache__arm_features(hw1, 0, s, sizeof s);
    printf("# arm n1-like: %s\n", s);
    n = split_features(s, v, 128);
    KT_CHECK(n > 30);
    for (i = 1; i < n; i++) KT_CHECK(strcmp(v[i - 1].name, v[i].name) < 0);
    KT_CHECK(has_token(s, "+neon") && has_token(s, "+fp-armv8") && has_token(s, "+crc"));
    KT_CHECK(has_token(s, "+lse") && has_token(s, "+crypto") && has_token(s, "+aes"));
    KT_CHECK(has_token(s, "+sha2") && has_token(s, "+dotprod") && has_token(s, "+fullfp16"));
    KT_CHECK(has_token(s, "+rdm") && has_token(s, "+rcpc") && has_token(s, "+ssbs"));
    KT_CHECK(has_token(s, "-sve") && has_token(s, "-sve2") && has_token(s, "-sha3"));
    /* AES without PMULL is not LLVM's aes, nor crypto; SVE2 lives in HWCAP2 */
    kcache__arm_features((1u << 0) | (1u << 1) | (1u << 3) | (1u << 22), 1u << 1, s, sizeof s);
    KT_CHECK(has_token(s, "-aes") && has_token(s, "-crypto") && has_token(s, "+sve"));
    KT_CHECK(has_token(s, "+sve2") && has_token(s, "-sve2-aes"));
}

int main(void)
{
    /* valgrind emulates CPUID (another model, fewer features), so what we decode there cannot match
       LLVM's or the kernel's view of the real CPU: scripts/memcheck.sh sets KT_VALGRIND=1 to
       leave out those comparisons; the same code still runs in the other groups */
    const int real_cpuid = getenv("KT_VALGRIND") == NULL;
    KT_RUN(test_os_arch);
    if (real_cpuid) KT_RUN(test_cpu_name_matches_llvm);
    KT_RUN(test_features_format);
    if (real_cpuid) KT_RUN(test_features_match_llvm);
    KT_RUN(test_truncation);
    KT_RUN(test_cost);
#if defined(KCACHE__HOST_X86)
    KT_RUN(test_x86_names);
    KT_RUN(test_x86_os_state);
    KT_RUN(test_x86_apx_avx10);
#if defined(__linux__)
    if (real_cpuid) KT_RUN(test_x86_family_model);
#endif
#endif
    KT_RUN(test_arm_names);
    KT_RUN(test_arm_features);
    if (!real_cpuid) printf("# KT_VALGRIND: left out the comparisons with LLVM and /proc/cpuinfo\n");
    KT_EXIT();
}
