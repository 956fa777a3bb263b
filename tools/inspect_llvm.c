/* inspect_llvm.c - kcache-inspect: this machine's CPU as each numba's LLVM names it.
 *
 * numba keys an overload on the CPU name and feature string of the LLVM it was built with, so
 * which one an index must hold depends on the numba that reads it: the table of which numba
 * builds with which LLVM, the host's name and features as that LLVM gives them, the feature
 * strings compared (byte for byte, or name by name when another LLVM listed them), and --host,
 * which prints the names of every LLVM the tool knows. */
#include "inspect.h"

/* ---------------------------------------------------------------------------------------- */
/* Host CPU.                                                                                 */

/* numba -> llvmlite -> LLVM.  numba's magic tuple holds the CPU name that *its* LLVM's host
 * detection returns, and LLVM learns CPUs release by release (a CPU newer than the LLVM is
 * "generic", or an older family name), so the name an index must hold to be used depends on
 * the LLVM of the numba that reads it.  Each numba release pins one llvmlite minor (its wheels'
 * metadata: numba 0.50.0 "llvmlite<0.34,>=0.33.0.dev0", 0.57.0 "<0.41,>=0.40.0dev0", ...,
 * 0.63.0 and 0.64.0 both "<0.47,>=0.46.0dev0", 0.68.0 "<0.51,>=0.50.0dev0"; the PyPI pages of
 * 0.51 and 0.54 say "llvmlite 0.34.*" and "0.37.*"), and each llvmlite builds with the LLVM of
 * llvmlite's "Historical compatibility table" (its README: 0.33 LLVM 9, 0.34-0.36 10,
 * 0.37-0.39 11, 0.40 11 and 14, 0.41-0.43 14, 0.44 15 and 16, 0.45-0.47 20, 0.48+ 22).  The
 * LLVM of each wheel was checked by loading it (llvm_version_info: 0.33.0 9.0.1, 0.36.0 10.0.1,
 * 0.39.1 11.1.0, 0.40.1 and 0.43.0 14.0.6, 0.44.0 15.0.7, 0.47.0 20.1.8, 0.50.0 22.1.0).
 * Distributions may build with another LLVM: Debian 12's llvmlite 0.39.1 reports LLVM 14.  The
 * index tells the two apart: each overload holds the target triple of the LLVM that wrote it,
 * "x86_64-unknown-linux-gnu" from every PyPI wheel above, "x86_64-pc-linux-gnu" from Debian's
 * LLVM (both checked with llvmlite's get_process_triple). */
typedef struct ki_numba_llvm {
    unsigned char lo, hi;          /* numba 0.lo .. 0.hi */
    unsigned char llvm[2];         /* [0] the LLVM of PyPI's wheels; [1] another build's, 0: none known */
    const char *other;             /* who builds with llvm[1] */
    const char *other_triple;      /* the end of the target triple that build writes, NULL: not known */
} ki_numba_llvm;

#define KI_PYPI_TRIPLE "-unknown-linux-gnu"   /* llvmlite's wheels, x86-64 Linux */

static const ki_numba_llvm ki_numba_llvms[] = {
    {50, 50, {9, 0}, NULL, NULL},
    {51, 53, {10, 0}, NULL, NULL},
    {54, 55, {11, 0}, NULL, NULL},
    {56, 56, {11, 14}, "Debian 12's python3-numba", "-pc-linux-gnu"},
    {57, 57, {14, 11}, "llvmlite 0.40 built with LLVM 11", NULL},
    {58, 60, {14, 0}, NULL, NULL},
    {61, 61, {15, 16}, "llvmlite 0.44 built with LLVM 16", NULL},
    {62, 65, {20, 0}, NULL, NULL},
    {66, 68, {22, 0}, NULL, NULL},
};

/* "0.56.4" -> 56; -1 when it is not 0.N[...]. */
int ki_numba_minor(const char *v, size_t n)
{
    size_t i = 2;
    int m = 0;
    if (n < 3 || v[0] != '0' || v[1] != '.' || v[2] < '0' || v[2] > '9') return -1;
    while (i < n && v[i] >= '0' && v[i] <= '9' && m < 10000) m = m * 10 + (v[i++] - '0');
    return m;
}

/* ---------------------------------------------------------------------------------------- */
/* What each LLVM calls this CPU (x86).  kcache.h names it as the newest LLVM does; numba's     */
/* older releases are built on older LLVMs, so their names are kept here, where only the      */
/* predictions need them.  The vendor, family and model come from CPUID, read here; whether a */
/* feature is there, from kcache.h's own feature string (its CPUID and OS-state rules).       */

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#define KI_X86 1
#endif

/* Whether feature name is on ("+name" in the string). */
static int ki_x86_has(const ki_x86_cpu *x, const char *name)
{
    const char *p = x->features;
    size_t n = strlen(name);
    while (p && *p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n + 1 && p[0] == '+' && memcmp(p + 1, name, n) == 0) return 1;
        p = end ? end + 1 : NULL;
    }
    return 0;
}

/* ---- x86 CPU names, per LLVM version (moved from kcache.h, which keeps the newest LLVM's) ---
 * numba keys its cache on the name its own LLVM's host detection gives the CPU, and LLVM learns
 * CPUs release by release: a CPU newer than an LLVM gets "generic" (an unknown family) or, for
 * an unknown Intel family-6 model, the newest line whose features it has (the "guess" below,
 * present in every LLVM from 9 to 22).  So the decoders take the LLVM major version v.
 *
 * What each entry rests on: LLVM 9, 10, 11, 13, 14, 15, 16, 19, 20 and 22 (llvmlite's wheels
 * 0.33.0, 0.36.0, 0.39.1, 0.43.0, 0.44.0, 0.47.0 and 0.50.0; Debian 12's libLLVM 13, 16 and
 * 19) were asked for the host CPU name under qemu-x86_64 (7.2) with made-up CPUIDs: every model
 * 0x00-0xff of Intel family 6 and AMD families 23, 25 and 26, models 0x00-0x3f of Intel
 * families 18 and 19, the other families' listed models, and the non-AVX-512 steps of the
 * guess (scripts/llvm-host-names.sh repeats it).  LLVM 12, 17, 18 and 21, which no numba
 * release uses, were not run: a name first seen in a checked version is dated to it (an LLVM
 * 12, 17, 18 or 21 may already have it), except where LLVM's history dates it (noted).  The
 * guess's AVX-512 steps cannot be run under qemu (TCG has no AVX-512) and follow LLVM's source
 * (the same in the LLVM 17, 18 and 22 Host.cpp read).  kcache.h names the CPU as the newest
 * LLVM does, with this table's LLVM 22 column (tests/test_inspect_llvm.c holds the two to the
 * same answers). */
typedef struct ki_x86_model {
    unsigned char model;
    unsigned char since, until; /* the LLVM majors naming it so; until 0: still */
    const char *name;
} ki_x86_model;

/* Intel family 6 models with a fixed LLVM name (0x55 and unlisted models are decided from the
 * features below).  since 9: every checked LLVM; a later since or an until: as run. */
static const ki_x86_model ki_x86_intel6[] = {
    /* the P6 line: LLVM 9 and 10 only (from 11 on these models go to the guess) */
    {0x01, 9, 10, "pentiumpro"},
    {0x03, 9, 10, "pentium2"}, {0x05, 9, 10, "pentium2"}, {0x06, 9, 10, "pentium2"},
    {0x07, 9, 10, "pentium3"}, {0x08, 9, 10, "pentium3"}, {0x0a, 9, 10, "pentium3"},
    {0x0b, 9, 10, "pentium3"},
    {0x09, 9, 10, "pentium-m"}, {0x0d, 9, 10, "pentium-m"}, {0x15, 9, 10, "pentium-m"},
    {0x0e, 9, 10, "yonah"},
    {0x0f, 9, 0, "core2"}, {0x16, 9, 0, "core2"},
    {0x17, 9, 0, "penryn"}, {0x1d, 9, 0, "penryn"},
    {0x1a, 9, 0, "nehalem"}, {0x1e, 9, 0, "nehalem"}, {0x1f, 9, 0, "nehalem"}, {0x2e, 9, 0, "nehalem"},
    {0x25, 9, 0, "westmere"}, {0x2c, 9, 0, "westmere"}, {0x2f, 9, 0, "westmere"},
    {0x2a, 9, 0, "sandybridge"}, {0x2d, 9, 0, "sandybridge"},
    {0x3a, 9, 0, "ivybridge"}, {0x3e, 9, 0, "ivybridge"},
    {0x3c, 9, 0, "haswell"}, {0x3f, 9, 0, "haswell"}, {0x45, 9, 0, "haswell"}, {0x46, 9, 0, "haswell"},
    {0x3d, 9, 0, "broadwell"}, {0x47, 9, 0, "broadwell"}, {0x4f, 9, 0, "broadwell"}, {0x56, 9, 0, "broadwell"},
    {0x4e, 9, 0, "skylake"}, {0x5e, 9, 0, "skylake"}, {0x8e, 9, 0, "skylake"}, {0x9e, 9, 0, "skylake"},
    {0xa5, 11, 0, "skylake"}, {0xa6, 11, 0, "skylake"},   /* Comet Lake */
    {0xa7, 13, 0, "rocketlake"},
    {0x66, 9, 0, "cannonlake"},
    {0x7d, 9, 0, "icelake-client"}, {0x7e, 9, 0, "icelake-client"},
    {0x6a, 9, 0, "icelake-server"}, {0x6c, 9, 0, "icelake-server"},
    {0x8c, 14, 0, "tigerlake"}, {0x8d, 14, 0, "tigerlake"},
    {0x97, 14, 0, "alderlake"}, {0x9a, 14, 0, "alderlake"},
    {0xbe, 19, 19, "alderlake"}, {0xbe, 20, 0, "gracemont"},
    {0xb7, 16, 19, "alderlake"}, {0xb7, 20, 0, "raptorlake"},
    {0xba, 19, 19, "alderlake"}, {0xba, 20, 0, "raptorlake"},
    {0xbf, 19, 19, "alderlake"}, {0xbf, 20, 0, "raptorlake"},
    {0xaa, 16, 19, "alderlake"}, {0xaa, 20, 0, "meteorlake"},
    {0xac, 16, 19, "alderlake"}, {0xac, 20, 0, "meteorlake"},
    {0xc5, 19, 0, "arrowlake"}, {0xb5, 20, 0, "arrowlake"},
    {0xc6, 19, 0, "arrowlake-s"},
    {0xbd, 19, 19, "arrowlake-s"}, {0xbd, 20, 0, "lunarlake"},
    {0xcc, 19, 0, "pantherlake"},
    {0xd5, 22, 0, "wildcatlake"},
    {0x8f, 13, 0, "sapphirerapids"},
    {0xcf, 16, 19, "sapphirerapids"}, {0xcf, 20, 0, "emeraldrapids"},
    {0xad, 16, 0, "graniterapids"},
    {0xae, 16, 18, "graniterapids"}, {0xae, 19, 0, "graniterapids-d"},
    {0x1c, 9, 0, "bonnell"}, {0x26, 9, 0, "bonnell"}, {0x27, 9, 0, "bonnell"}, {0x35, 9, 0, "bonnell"},
    {0x36, 9, 0, "bonnell"},
    {0x37, 9, 0, "silvermont"}, {0x4a, 9, 0, "silvermont"}, {0x4d, 9, 0, "silvermont"}, {0x5a, 9, 0, "silvermont"},
    {0x5d, 9, 0, "silvermont"}, {0x4c, 9, 0, "silvermont"},
    {0x5c, 9, 0, "goldmont"}, {0x5f, 9, 0, "goldmont"},
    {0x7a, 9, 0, "goldmont-plus"},
    {0x86, 9, 0, "tremont"}, {0x8a, 19, 0, "tremont"}, {0x96, 19, 0, "tremont"}, {0x9c, 19, 0, "tremont"},
    {0xaf, 16, 0, "sierraforest"},
    {0xb6, 16, 0, "grandridge"},
    {0xdd, 19, 0, "clearwaterforest"},
    {0x57, 9, 0, "knl"},
    {0x85, 9, 0, "knm"},
};

static const char *ki_x86_intel_name(const ki_x86_cpu *x, unsigned v)
{
    size_t i;
    switch (x->family) {
    case 3: return "i386";
    case 4: return "i486";
    case 5: return ki_x86_has(x, "mmx") ? "pentium-mmx" : "pentium";
    case 6:
        if (x->model == 0x55) { /* Skylake, Cascade Lake and Cooper Lake Xeons share it */
            if (ki_x86_has(x, "avx512bf16")) return "cooperlake";
            if (ki_x86_has(x, "avx512vnni")) return "cascadelake";
            return "skylake-avx512";
        }
        for (i = 0; i < sizeof ki_x86_intel6 / sizeof ki_x86_intel6[0]; i++) {
            const ki_x86_model *e = &ki_x86_intel6[i];
            if (e->model == x->model && v >= e->since && (e->until == 0 || v <= e->until)) return e->name;
        }
        /* An unlisted family-6 model: the newest line whose features it has. */
        if (ki_x86_has(x, "avx512vp2intersect")) return "tigerlake";
        if (ki_x86_has(x, "avx512vbmi2")) return "icelake-client";
        if (ki_x86_has(x, "avx512vbmi")) return "cannonlake";
        if (ki_x86_has(x, "avx512bf16")) return "cooperlake";
        if (ki_x86_has(x, "avx512vnni")) return "cascadelake";
        if (ki_x86_has(x, "avx512vl")) return "skylake-avx512";
        if (ki_x86_has(x, "avx512er")) return "knl";
        if (ki_x86_has(x, "clflushopt"))
            return ki_x86_has(x, "sha") ? "goldmont" : "skylake";
        if (ki_x86_has(x, "adx")) return "broadwell";
        if (ki_x86_has(x, "avx2")) return "haswell";
        if (ki_x86_has(x, "avx")) return "sandybridge";
        if (ki_x86_has(x, "sse4.2"))
            return ki_x86_has(x, "movbe") ? "silvermont" : "nehalem";
        if (ki_x86_has(x, "sse4.1")) return "penryn";
        if (ki_x86_has(x, "ssse3"))
            return ki_x86_has(x, "movbe") ? "bonnell" : "core2";
        if (ki_x86_has(x, "64bit")) return "core2";
        if (ki_x86_has(x, "sse3")) return "yonah";
        if (ki_x86_has(x, "sse2")) return "pentium-m";
        if (ki_x86_has(x, "sse")) return "pentium3";
        if (ki_x86_has(x, "mmx")) return "pentium2";
        return "pentiumpro";
    case 15:
        if (ki_x86_has(x, "64bit")) return "nocona";
        if (ki_x86_has(x, "sse3")) return "prescott";
        return "pentium4";
    case 18: /* Nova Lake: LLVM 22 */
        return v >= 22 && (x->model == 0x01 || x->model == 0x03) ? "novalake" : "generic";
    case 19: /* Diamond Rapids: LLVM 20 (-march=diamondrapids, #116564, Nov 2024) */
        return v >= 20 && x->model == 0x01 ? "diamondrapids" : "generic";
    default: return "generic";
    }
}

static const char *ki_x86_amd_name(const ki_x86_cpu *x, unsigned v)
{
    unsigned m = x->model;
    switch (x->family) {
    case 4: return "i486";
    case 5:
        switch (m) {
        case 6: case 7: return "k6";
        case 8: return "k6-2";
        case 9: case 13: return "k6-3";
        case 10: return "geode";
        default: return "pentium";
        }
    case 6: return ki_x86_has(x, "sse") ? "athlon-xp" : "athlon";
    case 15: return ki_x86_has(x, "sse3") ? "k8-sse3" : "k8";
    case 16: return "amdfam10";
    case 18: return v >= 20 ? "amdfam10" : "generic"; /* Llano: LLVM 20 (#111312, Oct 2024) */
    case 20: return "btver1";
    case 21: /* Bulldozer, Piledriver, Steamroller, Excavator */
        if (m >= 0x60 && m <= 0x7f) return "bdver4";
        if (m >= 0x30 && m <= 0x3f) return "bdver3";
        if ((m >= 0x10 && m <= 0x1f) || m == 0x02) return "bdver2";
        return "bdver1";
    case 22: return "btver2";
    case 23: /* Zen, Zen+, Zen 2 */
        if (v >= 18) { /* Renoir, Lucienne, Mendocino, ...: #74955 (merged 2023-12-12, before LLVM 18 branched) */
            if ((m >= 0x30 && m <= 0x3f) || m == 0x47 || (m >= 0x60 && m <= 0x7f) ||
                (m >= 0x84 && m <= 0x87) || (m >= 0x90 && m <= 0xaf))
                return "znver2";
        } else if ((m >= 0x30 && m <= 0x3f) || (v >= 10 && m == 0x71)) {
            return "znver2";
        }
        return "znver1";
    case 25: /* Zen 3, Zen 4: family 19h is generic to LLVM 11, znver3 to LLVM 13 */
        if (v < 13) return "generic";
        if (v >= 18) { /* with the Zen 2 models above (the Host.cpp that has #74955 has these too) */
            if ((m >= 0x10 && m <= 0x1f) || (m >= 0x60 && m <= 0x7f) || (m >= 0xa0 && m <= 0xaf)) return "znver4";
        } else if (v >= 16) { /* LLVM 16 added znver4 (D139073, "AMD Zen 4 Initial enablement") */
            if ((m >= 0x10 && m <= 0x1f) || (m >= 0x60 && m <= 0x74) || (m >= 0x78 && m <= 0x7b) ||
                (m >= 0xa0 && m <= 0xaf))
                return "znver4";
        }
        return "znver3";
    case 26: return v >= 19 ? "znver5" : "generic"; /* Zen 5 (every model): LLVM 19 */
    default: return "generic";
    }
}

const char *ki_x86_name(const ki_x86_cpu *x, unsigned v)
{
    if (x->vendor == KI_X86_INTEL) return ki_x86_intel_name(x, v);
    if (x->vendor == KI_X86_AMD) return ki_x86_amd_name(x, v);
    return "generic";
}

#if defined(KI_X86)
/* This CPU's vendor, family and model, the way LLVM computes them (the extended model counts for
   families 6 and 15, the extended family only for 15), and kcache's feature string into feat. */
static void ki_x86_read(ki_x86_cpu *x, char *feat, size_t cap)
{
    unsigned a, b, c, d;
    char vendor[12];
    memset(x, 0, sizeof *x);
    ki_host_cpu_features(feat, cap);
    x->features = feat;
    if (__get_cpuid_max(0, NULL) < 1) return;
    __cpuid(0, a, b, c, d);
    memcpy(vendor, &b, 4); /* EBX EDX ECX spell the vendor */
    memcpy(vendor + 4, &d, 4);
    memcpy(vendor + 8, &c, 4);
    if (memcmp(vendor, "GenuineIntel", 12) == 0) x->vendor = KI_X86_INTEL;
    else if (memcmp(vendor, "AuthenticAMD", 12) == 0) x->vendor = KI_X86_AMD;
    else x->vendor = KI_X86_OTHER;
    __cpuid(1, a, b, c, d);
    x->family = (a >> 8) & 0xfu;
    x->model = (a >> 4) & 0xfu;
    if (x->family == 6 || x->family == 15) {
        if (x->family == 15) x->family += (a >> 20) & 0xffu;
        x->model += ((a >> 16) & 0xfu) << 4;
    }
}
#endif

int ki_host_cpu_name_llvm(unsigned llvm, char *out, size_t cap)
{
#if defined(KI_X86)
    char feat[KI_HOST_FEATURES_MAX];
    ki_x86_cpu x;
    unsigned v = llvm < KI_LLVM_OLDEST ? KI_LLVM_OLDEST : llvm > KI_LLVM_NEWEST ? KI_LLVM_NEWEST : llvm;
    ki_x86_read(&x, feat, sizeof feat);
    ki_fmt(out, cap, "%s", ki_x86_name(&x, v));
    return v == llvm;
#else
    (void)llvm;
    ki_host_cpu_name(out, cap);
    return 2;
#endif
}

static int str_ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        int ca = *a >= 'A' && *a <= 'Z' ? *a + 32 : *a, cb = *b >= 'A' && *b <= 'Z' ? *b + 32 : *b;
        if (ca != cb) return 0;
    }
    return *a == *b;
}

/* The LLVM majors the numba of version v builds with ([0]: PyPI's).  0 when numba is older than
 * the table (LLVM 8 or older); a numba newer than the table is taken to use the newest LLVM. */
static int numba_llvms(int minor, int *llvm, const char **other, const char **other_triple, int *beyond)
{
    size_t k;
    *other = *other_triple = NULL;
    *beyond = 0;
    for (k = 0; k < sizeof ki_numba_llvms / sizeof ki_numba_llvms[0]; k++) {
        const ki_numba_llvm *e = &ki_numba_llvms[k];
        if (minor >= e->lo && minor <= e->hi) {
            llvm[0] = e->llvm[0];
            llvm[1] = e->llvm[1];
            *other = e->other;
            *other_triple = e->other_triple;
            return e->llvm[1] ? 2 : 1;
        }
    }
    if (minor > ki_numba_llvms[sizeof ki_numba_llvms / sizeof ki_numba_llvms[0] - 1].hi) {
        llvm[0] = KI_LLVM_NEWEST;
        *beyond = 1;
        return 1;
    }
    return 0;
}

/* Whether an index holds an overload compiled on this machine by a numba that named it cpu: its
 * CPU name and its features (by name: another LLVM's list) are this host's, so not an override
 * such as NUMBA_CPU_NAME=generic (whose features are ""). */
static int index_has_cpu(const nb_index *ix, const char *cpu, const char *feat)
{
    size_t k;
    for (k = 0; k < ix->nov; k++)
        if (ix->ov[k].shape_ok && ix->ov[k].cpu->n == strlen(cpu) && memcmp(ix->ov[k].cpu->s, cpu, ix->ov[k].cpu->n) == 0 &&
            feat_match_by_name(ix->ov[k].features->s, ix->ov[k].features->n, (const unsigned char *)feat, strlen(feat)))
            return 1;
    return 0;
}

/* Whether an overload of ix has a target triple ending in tail. */
static int index_has_triple(const nb_index *ix, const char *tail)
{
    size_t k, tl = strlen(tail);
    for (k = 0; k < ix->nov; k++)
        if (ix->ov[k].shape_ok && ix->ov[k].triple->n >= tl && memcmp(ix->ov[k].triple->s + ix->ov[k].triple->n - tl, tail, tl) == 0)
            return 1;
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* AVX10 as each LLVM's host detection reports it (llvm/lib/TargetParser/Host.cpp as released,  */
/* quirks included).  kcache's feature string is one for every LLVM, with the newest's          */
/* conditions; where the LLVM that reads an index decided otherwise, its own answer is taken:    */
/*   LLVM <= 17  no AVX10 names;                                                               */
/*   LLVM 18-19  avx10.1-256: leaf 7 subleaf 1 EDX bit 19 (with the AVX-512 state saved);       */
/*               avx10.1-512: that and leaf 0x24's EBX bit 18;                                 */
/*   LLVM 20     avx10.1-256/-512, avx10.2-256/-512: the bit, and leaf 0x24's version as a      */
/*               truth value ("HasLeaf24 && (EBX & 0xff)", so never 2: no avx10.2), 512 bit 18;  */
/*   LLVM 21     avx10.1, avx10.2 (the 256-bit names gone), the same version test;              */
/*   LLVM 22     avx10.1, avx10.2, leaf 0x24 subleaf 0 and the version number itself (llvm-     */
/*               project pull request 172350, December 2025).                                  */
/* Before 22 LLVM queried leaf 0x24 without setting ECX, so the subleaf was whatever ECX held:  */
/* on real hardware not 0, and AVX10 was never seen.  That query is modelled as subleaf 1       */
/* (reserved: EBX 0 on every AVX10 CPU so far).                                                */
/* For tests, KCACHE_INSPECT_CPUID replaces the CPUID this reads: "LEAF.SUB:EAX:EBX:ECX:EDX"     */
/* entries (hex) separated by commas ("xcr0:HEX" accepted, unused); a leaf not given reads as 0s */

typedef struct ki_cpuid_src { const char *fake; } ki_cpuid_src;

/* One CPUID leaf/subleaf: from KCACHE_INSPECT_CPUID when set, else the processor.  0 when
 * neither can say (not x86). */
static int ki_cpuid(const ki_cpuid_src *c, unsigned leaf, unsigned sub, unsigned r[4])
{
    r[0] = r[1] = r[2] = r[3] = 0;
    if (c->fake) {
        const char *p = c->fake;
        while (*p) {
            char *end;
            unsigned long l, sl = 0, v[4] = {0, 0, 0, 0};
            int k;
            while (*p == ',' || *p == ' ') p++;
            if (!*p) break;
            if (strncmp(p, "xcr0:", 5) == 0) { while (*p && *p != ',') p++; continue; }
            l = strtoul(p, &end, 16);
            if (*end == '.') sl = strtoul(end + 1, &end, 16);
            for (k = 0; k < 4 && *end == ':'; k++) v[k] = strtoul(end + 1, &end, 16);
            if (l == leaf && sl == sub) { for (k = 0; k < 4; k++) r[k] = (unsigned)v[k]; return 1; }
            p = end;
            while (*p && *p != ',') p++;
        }
        return 1;
    }
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    {
        unsigned a = leaf, b, cc = sub, d;
        __asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(cc), "=d"(d));
        r[0] = a; r[1] = b; r[2] = cc; r[3] = d;
        return 1;
    }
#else
    (void)leaf; (void)sub;
    return 0;
#endif
}

/* Sets name's sign in the feature string f ("+a,-b,..."), appending it when absent. */
static void feat_set(char *f, size_t cap, const char *name, int on)
{
    size_t nl = strlen(name), fl = strlen(f);
    char *p = f;
    while (*p) {
        char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == nl + 1 && (p[0] == '+' || p[0] == '-') && memcmp(p + 1, name, nl) == 0) { p[0] = on ? '+' : '-'; return; }
        if (!e) break;
        p = e + 1;
    }
    if (fl + nl + 3 < cap) ki_fmt(f + fl, cap - fl, "%s%c%s", fl ? "," : "", on ? '+' : '-', name);
}

/* Removes name ("+name" or "-name") from the feature string f: a name that LLVM does not report. */
static void feat_del(char *f, const char *name)
{
    size_t nl = strlen(name);
    char *p = f;
    while (*p) {
        char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == nl + 1 && (p[0] == '+' || p[0] == '-') && memcmp(p + 1, name, nl) == 0) {
            if (e) memmove(p, e + 1, strlen(e + 1) + 1);
            else if (p > f) p[-1] = 0;   /* the last one: its comma goes too */
            else *p = 0;
            return;
        }
        if (!e) break;
        p = e + 1;
    }
}

/* Rewrites the AVX10 names of detected feature string f as LLVM major llvm reports them. */
static void ki_host_avx10_llvm(int llvm, char *f, size_t cap)
{
    ki_cpuid_src c;
    unsigned r[4], max, ebx24;
    int has_avx10, ver, has512;
    static const char *const names[] = {"avx10.1", "avx10.2", "avx10.1-256", "avx10.1-512", "avx10.2-256", "avx10.2-512"};
    size_t i;
    c.fake = getenv("KCACHE_INSPECT_CPUID");
    /* the detector names every AVX10 feature of every LLVM; this LLVM reports only its own
       (none before 18; -256/-512 in 18-20; avx10.1/avx10.2 from 21) */
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        int mine = llvm >= 21 ? i < 2 : llvm == 20 ? i >= 2 : llvm >= 18 ? (i == 2 || i == 3) : 0;
        if (!mine) feat_del(f, names[i]);
    }
    if (llvm < 18 || !ki_cpuid(&c, 0, 0, r)) return;
    max = r[0];
    has_avx10 = 0;
    if (max >= 7 && (ki_cpuid(&c, 7, 0, r), r[0] >= 1)) {
        ki_cpuid(&c, 7, 1, r);
        has_avx10 = (r[3] >> 19) & 1u;
    }
    /* (no saved-state test: LLVM 18-22 set the AVX10 names from CPUID alone) */
    ebx24 = 0;
    if (max >= 0x24) { ki_cpuid(&c, 0x24, llvm >= 22 ? 0 : 1, r); ebx24 = r[1]; }
    ver = llvm >= 22 ? (int)(ebx24 & 0xffu) : (ebx24 & 0xffu) != 0;
    has512 = (ebx24 >> 18) & 1u;
    if (llvm <= 19) {
        feat_set(f, cap, "avx10.1-256", has_avx10);
        feat_set(f, cap, "avx10.1-512", has_avx10 && has512);
    } else if (llvm == 20) {
        feat_set(f, cap, "avx10.1-256", has_avx10 && ver >= 1);
        feat_set(f, cap, "avx10.1-512", has_avx10 && ver >= 1 && has512);
        feat_set(f, cap, "avx10.2-256", has_avx10 && ver >= 2);
        feat_set(f, cap, "avx10.2-512", has_avx10 && ver >= 2 && has512);
    } else {
        feat_set(f, cap, "avx10.1", has_avx10 && ver >= 1);
        feat_set(f, cap, "avx10.2", has_avx10 && ver >= 2);
    }
}

/* This machine's CPU as the numba that reads ix sees it.  --cpu, --features and numba's own
 * NUMBA_CPU_NAME / NUMBA_CPU_FEATURES win.  Otherwise kcache.h's detector gives the name (its
 * stable, newest-LLVM name, and what LLVM N calls this CPU) and the features: numba's LLVM
 * names a different set of features than the detector (on a Zen 5, LLVM 14 knows 32 fewer,
 * LLVM 22 6 fewer: names it dropped), so a detected feature string is compared with an index's name by name:
 * every feature both name must agree, one named by only one side is not compared.  --features
 * and NUMBA_CPU_FEATURES are compared byte for byte, as numba does. */
static void host_resolve(const ki_opts *op, const nb_index *ix, ki_host *h)
{
    const char *env_cpu = getenv("NUMBA_CPU_NAME"), *env_feat = getenv("NUMBA_CPU_FEATURES");
    const char *ver = op->numba_version;
    size_t vn;
    int minor, k, beyond = 0, in_table = 1;
    const char *other = NULL, *other_triple = NULL;
    memset(h, 0, sizeof *h);
    h->llvm_used = -1;
    if (op->cpu) { h->cpu = op->cpu; h->cpu_from = "--cpu"; }
    else if (env_cpu) { h->cpu = env_cpu; h->cpu_from = "NUMBA_CPU_NAME"; }
    if (op->features) { h->features = op->features; h->features_from = "--features"; }
    else if (env_feat) { h->features = env_feat; h->features_from = "NUMBA_CPU_FEATURES"; }
    else if (h->cpu && str_ieq(h->cpu, "generic")) { h->features = ""; h->features_from = "numba's default for generic"; }
    if (h->cpu && h->features) return;
    ki_host_cpu_name(h->detected, sizeof h->detected);
    ki_host_cpu_features(h->feat_buf, sizeof h->feat_buf);
    if (!h->features) {
        h->features = h->feat_buf;
        h->features_from = "detected (compared by name)";
        h->features_by_name = 1;
    }
    if (h->cpu || !h->detected[0]) return;
    h->cpu_from = "detected";
    ki_fmt(h->cpu_buf, sizeof h->cpu_buf, "%s", h->detected);
    h->cpu = h->cpu_buf;
    /* which LLVM reads the index: --llvm-version, else the numba's (--numba-version, else the
       index's own version) */
    if (ver) {
        vn = strlen(ver);
    } else {
        ver = (const char *)ix->version->s;
        vn = ix->version->n;
    }
    minor = ki_numba_minor(ver, vn);
    if (minor >= 0) ki_fmt(h->numba, sizeof h->numba, "0.%d", minor);
    if (op->llvm_version > 0) {
        h->llvm[0] = op->llvm_version;
        h->nllvm = 1;
        other = "--llvm-version";
    } else if (minor >= 0) {
        h->nllvm = numba_llvms(minor, h->llvm, &other, &other_triple, &beyond);
    }
    if (!h->nllvm) {
        ki_fmt(h->llvm_note, sizeof h->llvm_note, "numba %.20s is older than kcache's table of numba's LLVMs (LLVM 8 or "
               "older): taking the newest LLVM's name (pass --cpu or --llvm-version if numba names it otherwise)",
               minor >= 0 ? h->numba : "of an unrecognized version");
        return;
    }
    for (k = 0; k < h->nllvm; k++) {
        int r = ki_host_cpu_name_llvm((unsigned)h->llvm[k], h->llvm_name[k], sizeof h->llvm_name[k]);
        if (r != 1) in_table = 0;
        if (r == 2) ki_fmt(h->llvm_note, sizeof h->llvm_note, "kcache does not track this platform's CPU names per LLVM version");
    }
    h->llvm_used = 0;
    /* the triple says which build wrote the index, so which LLVM reads it, even where both
       name this CPU alike (a Zen 5 is generic to LLVM 11 and 14): llvm_used reports that LLVM */
    if (h->nllvm == 2 && other_triple) {
        int t0 = index_has_triple(ix, KI_PYPI_TRIPLE), t1 = index_has_triple(ix, other_triple);
        if (t0 != t1) h->llvm_used = t1;
    }
    if (h->nllvm == 2 && strcmp(h->llvm_name[0], h->llvm_name[1]) != 0) {
        /* the two builds name this CPU differently: an index written here holds one of them */
        int has0 = index_has_cpu(ix, h->llvm_name[0], h->feat_buf), has1 = index_has_cpu(ix, h->llvm_name[1], h->feat_buf);
        int t0 = index_has_triple(ix, KI_PYPI_TRIPLE), t1 = other_triple && index_has_triple(ix, other_triple);
        char pick[160];
        if (t0 != t1) {   /* the triple says which build wrote the index */
            h->llvm_used = t1;
            ki_fmt(pick, sizeof pick, "the index's target triple (...%s) is that build's: taken as this numba's",
                   t1 ? other_triple : KI_PYPI_TRIPLE);
        } else if (has0 != has1) {
            h->llvm_used = has1;
            ki_fmt(pick, sizeof pick, "the index holds LLVM %d's name: taken as this numba's", h->llvm[h->llvm_used]);
        } else {
            ki_fmt(pick, sizeof pick, "taking PyPI's (pass --llvm-version N for the other)");
        }
        ki_fmt(h->llvm_note, sizeof h->llvm_note, "numba %s's LLVM %d (PyPI's wheels) calls it %s, LLVM %d (%s) %s; %s", h->numba,
               h->llvm[0], h->llvm_name[0], h->llvm[1], other ? other : "another build", h->llvm_name[1], pick);
    } else if (beyond) {
        ki_fmt(h->llvm_note, sizeof h->llvm_note, "numba %s is newer than kcache's table of numba's LLVMs: taking LLVM %d's "
               "name (pass --cpu or --llvm-version if its LLVM names this CPU otherwise)", h->numba, h->llvm[0]);
    } else if (!in_table && !h->llvm_note[0]) {
        ki_fmt(h->llvm_note, sizeof h->llvm_note, "LLVM %d is outside kcache's table of LLVM host names (LLVM %d-%d): "
               "taking the nearest one's name", h->llvm[0], KI_LLVM_OLDEST, KI_LLVM_NEWEST);
    }
    if (h->llvm_name[h->llvm_used][0]) ki_fmt(h->cpu_buf, sizeof h->cpu_buf, "%s", h->llvm_name[h->llvm_used]);
}

void ki_host_resolve(const ki_opts *op, const nb_index *ix, ki_host *h)
{
    host_resolve(op, ix, h);
    /* detected features: the AVX10 names as the reading numba's LLVM reports them */
    if (h->features == h->feat_buf) {
        int llvm = h->llvm_used >= 0 && h->nllvm ? h->llvm[h->llvm_used] : op->llvm_version;
        if (llvm <= 0) {
            int lv[2], beyond = 0;
            const char *o = NULL, *ot = NULL;
            const char *ver = op->numba_version ? op->numba_version : (const char *)ix->version->s;
            int minor = ki_numba_minor(ver, op->numba_version ? strlen(ver) : ix->version->n);
            if (minor >= 0 && numba_llvms(minor, lv, &o, &ot, &beyond)) llvm = lv[0];
        }
        if (llvm > 0) ki_host_avx10_llvm(llvm, h->feat_buf, sizeof h->feat_buf);
    }
}

/* Feature strings: "+name,-name,...". */
typedef struct feat { const char *name; size_t len; char sign; } feat;

static size_t feat_parse(const unsigned char *s, size_t n, feat *out, size_t cap)
{
    size_t i = 0, cnt = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && s[j] != ',' && s[j] != ' ') j++;
        if (j > i && cnt < cap) {
            feat *f = &out[cnt++];
            f->sign = (s[i] == '+' || s[i] == '-') ? (char)s[i] : '+';
            f->name = (const char *)s + i + (s[i] == '+' || s[i] == '-');
            f->len = j - i - (size_t)(s[i] == '+' || s[i] == '-');
        }
        i = j + 1;
    }
    return cnt;
}

static int feat_cmp(const void *x, const void *y)
{
    const feat *a = (const feat *)x, *b = (const feat *)y;
    size_t l = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->name, b->name, l);
    return c ? c : a->len < b->len ? -1 : a->len > b->len;
}

#define KI_MAX_FEATS 1024

static void feat_emit(ki_out *o, char sign, const feat *f, size_t *nd, size_t max, int json)
{
    char buf[160];
    size_t l = f->len < 120 ? f->len : 120;
    buf[0] = sign;
    memcpy(buf + 1, f->name, l);
    buf[l + 1] = 0;
    if (*nd < max && o) {
        if (json) { if (*nd) ko_putc(o, ','); ko_json_cstr(o, buf); }
        else { ko_putc(o, ' '); ko_text(o, (const unsigned char *)buf, l + 1, 0); }
    }
    (*nd)++;
}

/* Writes the difference of features a against reference b, in name order: "+x" a enables x
 * where b does not, "-x" a disables x where b enables it, "?x" named by only one of the two
 * (left out with by_name: a detected reference names another LLVM's set of features).
 * Returns the number of differences; writes at most max of them.  Sorted merge: O(n log n)
 * whatever a hostile index holds; at most KI_MAX_FEATS entries of each string are compared. */
size_t feat_diff(ki_out *o, const unsigned char *a, size_t an, const unsigned char *b, size_t bn,
                 size_t max, int json, int by_name)
{
    static feat fa[KI_MAX_FEATS], fb[KI_MAX_FEATS];
    size_t na = feat_parse(a, an, fa, KI_MAX_FEATS), nb = feat_parse(b, bn, fb, KI_MAX_FEATS), i = 0, j = 0, nd = 0;
    qsort(fa, na, sizeof *fa, feat_cmp);
    qsort(fb, nb, sizeof *fb, feat_cmp);
    while (i < na || j < nb) {
        int c = i >= na ? 1 : j >= nb ? -1 : feat_cmp(&fa[i], &fb[j]);
        if (c < 0) { if (!by_name) feat_emit(o, '?', &fa[i], &nd, max, json); i++; }
        else if (c > 0) { if (!by_name) feat_emit(o, '?', &fb[j], &nd, max, json); j++; }
        else {
            if (fa[i].sign != fb[j].sign) feat_emit(o, fa[i].sign, &fa[i], &nd, max, json);
            i++; j++;
        }
    }
    return nd;
}

/* Whether an index's feature string a matches a detected host string b name by name: every
 * feature both name agrees, b names most (4 in 5) of a's features, and a names at least half
 * of b's, so that two LLVMs' lists of one CPU match while "" or a short list never matches a
 * full one.  b is kcache.h's list, every name of LLVM 14..22: an older LLVM's list names fewer
 * (LLVM 14's 88 of its 120 on a Zen 5), so b's side is held to half, not 4 in 5. */
int feat_match_by_name(const unsigned char *a, size_t an, const unsigned char *b, size_t bn)
{
    static feat fa[KI_MAX_FEATS], fb[KI_MAX_FEATS];
    size_t na = feat_parse(a, an, fa, KI_MAX_FEATS), nb = feat_parse(b, bn, fb, KI_MAX_FEATS), i = 0, j = 0, common = 0;
    qsort(fa, na, sizeof *fa, feat_cmp);
    qsort(fb, nb, sizeof *fb, feat_cmp);
    while (i < na && j < nb) {
        int c = feat_cmp(&fa[i], &fb[j]);
        if (c < 0) i++;
        else if (c > 0) j++;
        else {
            if (fa[i].sign != fb[j].sign) return 0;
            common++; i++; j++;
        }
    }
    return common * 5 >= na * 4 && common * 2 >= nb;
}

/* Whether a feature string is in the form numba computes for the host: llvmlite's
 * FeatureMap.flatten(), "+name" or "-name" for each feature, sorted by name, joined by ",".  A
 * string in another order can only come from NUMBA_CPU_FEATURES, and numba compares the strings
 * byte for byte: the same features in another order are another key. */
int feat_in_flatten_order(const unsigned char *s, size_t n)
{
    static feat fs[KI_MAX_FEATS];
    size_t nf = feat_parse(s, n, fs, KI_MAX_FEATS), k;
    if (nf >= KI_MAX_FEATS) return 0;
    for (k = 0; k < n; k++) if (s[k] == ' ') return 0;
    for (k = 0; k < nf; k++) {
        if (fs[k].name == (const char *)s || (fs[k].name[-1] != '+' && fs[k].name[-1] != '-')) return 0;
        if (k && feat_cmp(&fs[k - 1], &fs[k]) >= 0) return 0;
    }
    return 1;
}

size_t feat_count(const pk_node *f, size_t *enabled)
{
    static feat fs[KI_MAX_FEATS];
    size_t n = feat_parse(f->s, f->n, fs, KI_MAX_FEATS), k;
    *enabled = 0;
    for (k = 0; k < n; k++) if (fs[k].sign == '+') (*enabled)++;
    return n;
}

/* ---------------------------------------------------------------------------------------- */
/* --host: this machine's CPU as each LLVM, and so each numba release, names it.             */

void ki_host_report(const ki_opts *op, ki_out *o)
{
    char stable[128], name[128];
    static char feat[KI_HOST_FEATURES_MAX];
    unsigned v;
    size_t k;
    int r;
    ki_host_cpu_name(stable, sizeof stable);
    ki_host_cpu_features(feat, sizeof feat);
    r = ki_host_cpu_name_llvm(KI_LLVM_NEWEST, name, sizeof name);
    if (op->json) {
        ko_puts(o, "{\n  \"cpu\": "); ko_json_cstr(o, stable);
        ko_puts(o, ",\n  \"features\": "); ko_json_cstr(o, feat);
        ko_printf(o, ",\n  \"names_per_llvm\": %s", r == 2 ? "false" : "true");
        ko_puts(o, ",\n  \"llvm\": {");
        for (v = KI_LLVM_OLDEST; v <= KI_LLVM_NEWEST; v++) {
            ki_host_cpu_name_llvm(v, name, sizeof name);
            ko_printf(o, "%s\"%u\": ", v == KI_LLVM_OLDEST ? "" : ", ", v);
            ko_json_cstr(o, name);
        }
        ko_puts(o, "},\n  \"numba\": [");
        for (k = 0; k < sizeof ki_numba_llvms / sizeof ki_numba_llvms[0]; k++) {
            const ki_numba_llvm *e = &ki_numba_llvms[k];
            int q;
            ko_printf(o, "%s\n    {\"numba\": [\"0.%d\", \"0.%d\"], \"llvm\": [", k ? "," : "", e->lo, e->hi);
            for (q = 0; q < 2 && e->llvm[q]; q++) ko_printf(o, "%s%d", q ? ", " : "", e->llvm[q]);
            ko_puts(o, "], \"names\": [");
            for (q = 0; q < 2 && e->llvm[q]; q++) {
                ki_host_cpu_name_llvm(e->llvm[q], name, sizeof name);
                if (q) ko_puts(o, ", ");
                ko_json_cstr(o, name);
            }
            ko_puts(o, "], \"other_build\": "); ko_json_cstr(o, e->other);
            ko_puts(o, "}");
        }
        ko_puts(o, "\n  ]\n}\n");
        return;
    }
    ko_printf(o, "host CPU   %s (kcache's name: LLVM %d's)\n", stable, KI_LLVM_NEWEST);
    {
        size_t en = 0, nf;
        pk_node tmpn;
        memset(&tmpn, 0, sizeof tmpn);
        tmpn.s = (const unsigned char *)feat;
        tmpn.n = strlen(feat);
        nf = feat_count(&tmpn, &en);
        ko_printf(o, "features   %zu listed, %zu enabled (as kcache names them; numba's LLVM lists its own set):\n  %s\n", nf, en, feat);
    }
    if (r == 2) ko_puts(o, "per LLVM   not tracked on this platform: every LLVM is taken to name it as above\n");
    else {
        char prev[128] = "";
        ko_puts(o, "per LLVM  ");
        for (v = KI_LLVM_OLDEST; v <= KI_LLVM_NEWEST; v++) {
            ki_host_cpu_name_llvm(v, name, sizeof name);
            if (strcmp(name, prev) != 0) ko_printf(o, "%s %u+ %s", prev[0] ? "," : "", v, name);
            ki_fmt(prev, sizeof prev, "%s", name);
        }
        ko_putc(o, '\n');
    }
    ko_puts(o, "numba's    (numba -> its LLVM -> what that LLVM calls this CPU)\n");
    for (k = 0; k < sizeof ki_numba_llvms / sizeof ki_numba_llvms[0]; k++) {
        const ki_numba_llvm *e = &ki_numba_llvms[k];
        char n0[128], n1[128] = "";
        ki_host_cpu_name_llvm(e->llvm[0], n0, sizeof n0);
        if (e->llvm[1]) ki_host_cpu_name_llvm(e->llvm[1], n1, sizeof n1);
        char label[32];
        if (e->lo == e->hi) ki_fmt(label, sizeof label, "0.%d", e->lo);
        else ki_fmt(label, sizeof label, "0.%d-0.%d", e->lo, e->hi);
        ko_printf(o, "  %-10s LLVM %-2d %s", label, e->llvm[0], n0);
        if (e->llvm[1]) ko_printf(o, "; LLVM %d (%s) %s", e->llvm[1], e->other, n1);
        ko_putc(o, '\n');
    }
}
