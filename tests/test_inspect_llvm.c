/* test_inspect_llvm.c - kcache-inspect's CPU names per LLVM version (tools/inspect_llvm.c): what
 * LLVM 9 to 22 call made-up x86 CPUs, and this machine's name for the newest LLVM against kcache.h's.
 *
 * kcache.h names the CPU as the newest LLVM does; the names older LLVMs give (numba releases are
 * built on LLVM 9 to 22) live in the tool, which uses them only to predict numba.  Built from the
 * tool's files but its main (the Makefile's TOOL_INSPECT_LIB), as the fuzz targets are.
 * tests/test_inspect.sh compares kcache-inspect --host with real LLVMs, here and under qemu. */
#include "../tools/inspect.h"
#include "kt.h"

/* A made-up CPU: feats are space-separated feature names, all on. */
static const char *x86_name_llvm(unsigned vendor, unsigned family, unsigned model, const char *feats, unsigned v)
{
    static char list[512];
    ki_x86_cpu x;
    size_t n = 0;
    const char *p = feats;
    list[0] = 0;
    while (*p) {
        size_t len = strcspn(p, " ");
        if (len) n += (size_t)ki_fmt(list + n, sizeof list - n, "%s+%.*s", n ? "," : "", (int)len, p);
        p += len;
        while (*p == ' ') p++;
    }
    x.vendor = vendor;
    x.family = family;
    x.model = model;
    x.features = list;
    return ki_x86_name(&x, v);
}

/* What each LLVM calls made-up CPUs, as LLVM 9, 10, 11, 13, 14, 15, 16, 19, 20 and 22 answered
 * under qemu-x86_64 with these CPUIDs (scripts/llvm-host-names.sh): each row is one CPU and the
 * names of those ten versions in that order.  Every change between two versions in the tables
 * has a row here. */
typedef struct llvm_row {
    unsigned vendor, family, model;
    const char *feats;
    const char *names[10];
} llvm_row;
static const unsigned llvm_checked[10] = {9, 10, 11, 13, 14, 15, 16, 19, 20, 22};
#define G "generic"
static const llvm_row llvm_rows[] = {
    /* AMD: Zen 5 is generic before LLVM 19; Zen 4 is znver3 before 16 and generic before 12/13 */
    {KI_X86_AMD, 26, 0x02, "", {G, G, G, G, G, G, G, "znver5", "znver5", "znver5"}},
    {KI_X86_AMD, 26, 0x44, "", {G, G, G, G, G, G, G, "znver5", "znver5", "znver5"}},
    {KI_X86_AMD, 25, 0x11, "", {G, G, G, "znver3", "znver3", "znver3", "znver4", "znver4", "znver4", "znver4"}},
    {KI_X86_AMD, 25, 0x61, "", {G, G, G, "znver3", "znver3", "znver3", "znver4", "znver4", "znver4", "znver4"}},
    {KI_X86_AMD, 25, 0x75, "", {G, G, G, "znver3", "znver3", "znver3", "znver3", "znver4", "znver4", "znver4"}},
    {KI_X86_AMD, 25, 0x7c, "", {G, G, G, "znver3", "znver3", "znver3", "znver3", "znver4", "znver4", "znver4"}},
    {KI_X86_AMD, 25, 0x21, "", {G, G, G, "znver3", "znver3", "znver3", "znver3", "znver3", "znver3", "znver3"}},
    {KI_X86_AMD, 25, 0x80, "", {G, G, G, "znver3", "znver3", "znver3", "znver3", "znver3", "znver3", "znver3"}},
    {KI_X86_AMD, 23, 0x31, "", {"znver2", "znver2", "znver2", "znver2", "znver2", "znver2", "znver2", "znver2", "znver2", "znver2"}},
    {KI_X86_AMD, 23, 0x71, "", {"znver1", "znver2", "znver2", "znver2", "znver2", "znver2", "znver2", "znver2", "znver2", "znver2"}},
    {KI_X86_AMD, 23, 0x60, "", {"znver1", "znver1", "znver1", "znver1", "znver1", "znver1", "znver1", "znver2", "znver2", "znver2"}},
    {KI_X86_AMD, 23, 0x01, "", {"znver1", "znver1", "znver1", "znver1", "znver1", "znver1", "znver1", "znver1", "znver1", "znver1"}},
    {KI_X86_AMD, 18, 0x01, "", {G, G, G, G, G, G, G, G, "amdfam10", "amdfam10"}},
    /* Intel: models LLVM learnt, renamed, or forgot (the P6 line left for the guess in LLVM 11) */
    {KI_X86_INTEL, 6, 0x0e, "64bit sse3", {"yonah", "yonah", "core2", "core2", "core2", "core2", "core2", "core2", "core2", "core2"}},
    {KI_X86_INTEL, 6, 0xa5, "64bit", {"core2", "core2", "skylake", "skylake", "skylake", "skylake", "skylake", "skylake", "skylake", "skylake"}},
    {KI_X86_INTEL, 6, 0x8f, "64bit", {"core2", "core2", "core2", "sapphirerapids", "sapphirerapids", "sapphirerapids", "sapphirerapids", "sapphirerapids", "sapphirerapids", "sapphirerapids"}},
    {KI_X86_INTEL, 6, 0x97, "64bit", {"core2", "core2", "core2", "core2", "alderlake", "alderlake", "alderlake", "alderlake", "alderlake", "alderlake"}},
    {KI_X86_INTEL, 6, 0x8c, "64bit", {"core2", "core2", "core2", "core2", "tigerlake", "tigerlake", "tigerlake", "tigerlake", "tigerlake", "tigerlake"}},
    {KI_X86_INTEL, 6, 0xb7, "64bit", {"core2", "core2", "core2", "core2", "core2", "core2", "alderlake", "alderlake", "raptorlake", "raptorlake"}},
    {KI_X86_INTEL, 6, 0xba, "64bit", {"core2", "core2", "core2", "core2", "core2", "core2", "core2", "alderlake", "raptorlake", "raptorlake"}},
    {KI_X86_INTEL, 6, 0xcf, "64bit", {"core2", "core2", "core2", "core2", "core2", "core2", "sapphirerapids", "sapphirerapids", "emeraldrapids", "emeraldrapids"}},
    {KI_X86_INTEL, 6, 0xae, "64bit", {"core2", "core2", "core2", "core2", "core2", "core2", "graniterapids", "graniterapids-d", "graniterapids-d", "graniterapids-d"}},
    {KI_X86_INTEL, 6, 0xbd, "64bit", {"core2", "core2", "core2", "core2", "core2", "core2", "core2", "arrowlake-s", "lunarlake", "lunarlake"}},
    {KI_X86_INTEL, 6, 0xb5, "64bit", {"core2", "core2", "core2", "core2", "core2", "core2", "core2", "core2", "arrowlake", "arrowlake"}},
    {KI_X86_INTEL, 6, 0xd5, "64bit", {"core2", "core2", "core2", "core2", "core2", "core2", "core2", "core2", "core2", "wildcatlake"}},
    {KI_X86_INTEL, 6, 0x9c, "64bit", {"core2", "core2", "core2", "core2", "core2", "core2", "core2", "tremont", "tremont", "tremont"}},
    {KI_X86_INTEL, 19, 0x01, "64bit", {G, G, G, G, G, G, G, G, "diamondrapids", "diamondrapids"}},
    {KI_X86_INTEL, 18, 0x03, "64bit", {G, G, G, G, G, G, G, G, G, "novalake"}},
    /* the guess for an unknown family-6 model, the same in every version */
    {KI_X86_INTEL, 6, 0xfe, "64bit sse3 ssse3 sse4.1 sse4.2 movbe", {"silvermont", "silvermont", "silvermont", "silvermont", "silvermont", "silvermont", "silvermont", "silvermont", "silvermont", "silvermont"}},
    {KI_X86_INTEL, 6, 0xfe, "64bit sse3 ssse3 sse4.1 sse4.2 avx avx2 adx", {"broadwell", "broadwell", "broadwell", "broadwell", "broadwell", "broadwell", "broadwell", "broadwell", "broadwell", "broadwell"}},
    {KI_X86_INTEL, 6, 0xfe, "64bit sse3 ssse3 sse4.1 sse4.2 avx avx2 adx clflushopt", {"skylake", "skylake", "skylake", "skylake", "skylake", "skylake", "skylake", "skylake", "skylake", "skylake"}},
};
#undef G

static void test_x86_names_by_llvm(void)
{
    size_t i, k;
    char row[64];
    for (i = 0; i < sizeof llvm_rows / sizeof llvm_rows[0]; i++) {
        const llvm_row *r = &llvm_rows[i];
        for (k = 0; k < 10; k++) {
            const char *got = x86_name_llvm(r->vendor, r->family, r->model, r->feats, llvm_checked[k]);
            snprintf(row, sizeof row, "%s family %u model 0x%02x LLVM %u", r->vendor == KI_X86_AMD ? "AMD" : "Intel",
                     r->family, r->model, llvm_checked[k]);
            KT_CHECK_MSG(strcmp(got, r->names[k]) == 0, "%s: \"%s\", LLVM says \"%s\"", row, got, r->names[k]);
        }
    }
    /* a feature counts only when it is on ("-name" is there, off) */
    KT_CHECK_STR(x86_name_llvm(KI_X86_INTEL, 6, 0xfe, "avx avx2", 22), "haswell");
    {
        ki_x86_cpu x = {KI_X86_INTEL, 6, 0xfe, "-adx,+avx,+avx2,-avx512f"};
        KT_CHECK_STR(ki_x86_name(&x, 22), "haswell");
        x.features = "+adx,+avx,+avx2";
        KT_CHECK_STR(ki_x86_name(&x, 22), "broadwell");
    }
}

/* This machine: the newest LLVM's name is kcache.h's; outside the table, the nearest version's name
   (below LLVM 9 nothing is claimed) */
static void test_host_names(void)
{
    char ours[128], lib[128], out[128];
    int r = ki_host_cpu_name_llvm(KI_LLVM_NEWEST, ours, sizeof ours);
    ki_host_cpu_name(lib, sizeof lib);
    printf("# this CPU: kcache.h \"%s\", kcache-inspect for LLVM %d \"%s\"\n", lib, KI_LLVM_NEWEST, ours);
    KT_CHECK_STR(ours, lib);
#if defined(__x86_64__) || defined(__i386__)
    KT_CHECK_EQ_U64(r, 1);
    KT_CHECK_EQ_U64(ki_host_cpu_name_llvm(KI_LLVM_NEWEST + 1, out, sizeof out), 0);
    KT_CHECK_STR(out, ours);
    KT_CHECK_EQ_U64(ki_host_cpu_name_llvm(KI_LLVM_OLDEST - 1, out, sizeof out), 0);
    KT_CHECK_EQ_U64(ki_host_cpu_name_llvm(KI_LLVM_OLDEST, lib, sizeof lib), 1);
    KT_CHECK_STR(out, lib);
#else
    KT_CHECK_EQ_U64(r, 2); /* names not tracked per LLVM here */
#endif
}

int main(void)
{
    KT_RUN(test_x86_names_by_llvm);
    if (getenv("KT_VALGRIND") == NULL) KT_RUN(test_host_names); /* valgrind emulates another CPUID */
    KT_EXIT();
}
