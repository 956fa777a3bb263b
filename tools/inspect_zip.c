/* inspect_zip.c - kcache-inspect: one member of a zip archive, and inflate.
 *
 * numba's zip locator stamps a function imported from a zip archive with the archive's stat (up
 * to 0.67) or the sha256 of the member's bytes (0.68): the member is found in the central
 * directory and read, stored or deflated, with every length checked, the output bounded and its
 * CRC-32 compared with the archive's. */
#include "inspect.h"

/* ---------------------------------------------------------------------------------------- */
/* Zip members: numba 0.68's ZipCacheLocator stamps a function imported from a zip archive    */
/* with the sha256 of the member's bytes.  Stored and deflated members (what zipimport reads);*/
/* every length is checked, the output is bounded and its CRC-32 compared with the archive's.*/

static uint32_t zi_crc32(const unsigned char *p, size_t n)
{
    uint32_t table[256], c = 0xffffffffu;
    size_t i;
    int k;
    for (i = 0; i < 256; i++) {
        uint32_t v = (uint32_t)i;
        for (k = 0; k < 8; k++) v = v & 1 ? 0xedb88320u ^ (v >> 1) : v >> 1;
        table[i] = v;
    }
    for (i = 0; i < n; i++) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

/* Inflate (RFC 1951): canonical Huffman codes decoded bit by bit, which is slow and simple;
 * a source file is small. */
typedef struct zi_in {
    const unsigned char *p;
    size_t n, pos;
    uint32_t bits;
    int nbits;
    unsigned char *out;
    size_t len, cap, max;
} zi_in;

typedef struct zi_huff {
    unsigned short count[16];   /* codes of each length */
    unsigned short sym[320];    /* symbols in code order */
} zi_huff;

static int zi_need(zi_in *z, int n, unsigned *v)
{
    while (z->nbits < n) {
        if (z->pos >= z->n) return -1;
        z->bits |= (uint32_t)z->p[z->pos++] << z->nbits;
        z->nbits += 8;
    }
    *v = z->bits & ((1u << n) - 1u);
    z->bits >>= n;
    z->nbits -= n;
    return 0;
}

/* Builds the code from code lengths; -1 when the lengths over-subscribe the code. */
static int zi_build(zi_huff *h, const unsigned char *lens, int n)
{
    unsigned short offs[16];
    int i, left = 1;
    memset(h->count, 0, sizeof h->count);
    for (i = 0; i < n; i++) h->count[lens[i]]++;
    h->count[0] = 0;
    for (i = 1; i < 16; i++) {
        left <<= 1;
        left -= h->count[i];
        if (left < 0) return -1;
    }
    offs[1] = 0;
    for (i = 1; i < 15; i++) offs[i + 1] = (unsigned short)(offs[i] + h->count[i]);
    for (i = 0; i < n; i++) if (lens[i]) h->sym[offs[lens[i]]++] = (unsigned short)i;
    return 0;
}

static int zi_decode(zi_in *z, const zi_huff *h)
{
    int code = 0, first = 0, index = 0, len;
    for (len = 1; len < 16; len++) {
        unsigned b;
        int count = h->count[len];
        if (zi_need(z, 1, &b) != 0) return -1;
        code |= (int)b;
        if (code - count < first) return h->sym[index + (code - first)];
        index += count;
        first += count;
        first <<= 1;
        code <<= 1;
    }
    return -1;
}

static int zi_put(zi_in *z, unsigned char c)
{
    if (z->len == z->cap) {
        size_t nc = z->cap ? z->cap * 2 : 4096;
        unsigned char *nb;
        if (z->len >= z->max) return -1;
        if (nc > z->max) nc = z->max;
        nb = (unsigned char *)realloc(z->out, nc);
        if (!nb) return -1;
        z->out = nb;
        z->cap = nc;
    }
    z->out[z->len++] = c;
    return 0;
}

static int zi_codes(zi_in *z, const zi_huff *lit, const zi_huff *dist)
{
    static const unsigned short lbase[29] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
                                             35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
    static const unsigned char lextra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
                                             3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
    static const unsigned short dbase[30] = {1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193,
                                             257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
                                             8193, 12289, 16385, 24577};
    static const unsigned char dextra[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6,
                                             7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
    for (;;) {
        int sym = zi_decode(z, lit);
        unsigned e, len, d;
        if (sym < 0) return -1;
        if (sym < 256) { if (zi_put(z, (unsigned char)sym) != 0) return -1; continue; }
        if (sym == 256) return 0;
        sym -= 257;
        if (sym >= 29 || zi_need(z, lextra[sym], &e) != 0) return -1;
        len = lbase[sym] + e;
        sym = zi_decode(z, dist);
        if (sym < 0 || sym >= 30 || zi_need(z, dextra[sym], &e) != 0) return -1;
        d = dbase[sym] + e;
        if (d > z->len) return -1;
        while (len--) if (zi_put(z, z->out[z->len - d]) != 0) return -1;
    }
}

static int zi_dynamic(zi_in *z, zi_huff *lit, zi_huff *dist)
{
    static const unsigned char order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    unsigned char lens[320];
    unsigned hlit, hdist, hclen, v;
    int i = 0;
    zi_huff cl;
    if (zi_need(z, 5, &hlit) || zi_need(z, 5, &hdist) || zi_need(z, 4, &hclen)) return -1;
    hlit += 257; hdist += 1; hclen += 4;
    if (hlit > 286 || hdist > 30) return -1;
    memset(lens, 0, sizeof lens);
    for (i = 0; i < (int)hclen; i++) { if (zi_need(z, 3, &v)) return -1; lens[order[i]] = (unsigned char)v; }
    if (zi_build(&cl, lens, 19) != 0) return -1;
    i = 0;
    while (i < (int)(hlit + hdist)) {
        int sym = zi_decode(z, &cl), rep = 0;
        unsigned char val = 0;
        if (sym < 0) return -1;
        if (sym < 16) { lens[i++] = (unsigned char)sym; continue; }
        if (sym == 16) { if (i == 0 || zi_need(z, 2, &v)) return -1; val = lens[i - 1]; rep = 3 + (int)v; }
        else if (sym == 17) { if (zi_need(z, 3, &v)) return -1; rep = 3 + (int)v; }
        else { if (zi_need(z, 7, &v)) return -1; rep = 11 + (int)v; }
        if (i + rep > (int)(hlit + hdist)) return -1;
        while (rep--) lens[i++] = val;
    }
    if (lens[256] == 0) return -1;
    if (zi_build(lit, lens, (int)hlit) != 0 || zi_build(dist, lens + hlit, (int)hdist) != 0) return -1;
    return 0;
}

/* Inflates p[0..n) into a malloc'd buffer of at most max bytes; NULL on any error. */
unsigned char *zi_inflate(const unsigned char *p, size_t n, size_t max, size_t *outlen)
{
    zi_in z;
    unsigned last = 0, type;
    memset(&z, 0, sizeof z);
    z.p = p; z.n = n; z.max = max;
    while (!last) {
        if (zi_need(&z, 1, &last) || zi_need(&z, 2, &type)) goto fail;
        if (type == 0) {             /* stored: byte aligned LEN, NLEN, then LEN bytes */
            unsigned len;
            z.bits = 0; z.nbits = 0;
            if (z.n - z.pos < 4) goto fail;
            len = p[z.pos] | (unsigned)p[z.pos + 1] << 8;
            if ((len ^ 0xffffu) != (p[z.pos + 2] | (unsigned)p[z.pos + 3] << 8)) goto fail;
            z.pos += 4;
            if (z.n - z.pos < len) goto fail;
            while (len--) if (zi_put(&z, p[z.pos++]) != 0) goto fail;
        } else if (type == 1) {      /* fixed codes */
            zi_huff lit, dist;
            unsigned char lens[320];
            int i;
            for (i = 0; i < 144; i++) lens[i] = 8;
            for (; i < 256; i++) lens[i] = 9;
            for (; i < 280; i++) lens[i] = 7;
            for (; i < 288; i++) lens[i] = 8;
            zi_build(&lit, lens, 288);
            for (i = 0; i < 30; i++) lens[i] = 5;
            zi_build(&dist, lens, 30);
            if (zi_codes(&z, &lit, &dist) != 0) goto fail;
        } else if (type == 2) {
            zi_huff lit, dist;
            if (zi_dynamic(&z, &lit, &dist) != 0 || zi_codes(&z, &lit, &dist) != 0) goto fail;
        } else goto fail;
    }
    *outlen = z.len;
    if (!z.out) z.out = (unsigned char *)malloc(1);
    return z.out;
fail:
    free(z.out);
    return NULL;
}

static uint32_t rd_le32(const unsigned char *p) { return (uint32_t)ki_rd_le(p, 4); }
static unsigned rd_le16(const unsigned char *p) { return (unsigned)ki_rd_le(p, 2); }

/* Finds member name in the zip archive zip[0..n) (path names it in messages).  Returns a
 * malloc'd copy of its bytes (*len of them) or NULL with a one-line reason in err. */
unsigned char *zip_member_mem(const unsigned char *zip, size_t n, const char *path, const char *name, size_t *len,
                              char *err, size_t errcap)
{
    unsigned char *out = NULL;
    size_t eocd, cd, k, nl = strlen(name);
    unsigned entries, e;
    /* the end of central directory record: 22 bytes plus a comment of up to 64 KiB, at the end */
    if (n < 22) { ki_fmt(err, errcap, "%s: not a zip archive (too short)", path); return NULL; }
    for (eocd = n - 22;; eocd--) {
        if (rd_le32(zip + eocd) == 0x06054b50u && eocd + 22 + rd_le16(zip + eocd + 20) == n) break;
        if (eocd == 0 || n - eocd > 22 + 65535) { ki_fmt(err, errcap, "%s: not a zip archive (no end of central directory)", path); return NULL; }
    }
    entries = rd_le16(zip + eocd + 10);
    cd = rd_le32(zip + eocd + 16);
    if (cd > eocd) { ki_fmt(err, errcap, "%s: bad zip central directory offset", path); return NULL; }
    for (e = 0, k = cd; e < entries; e++) {
        unsigned method, fnl, xl, cl;
        uint32_t crc, csize, usize, lho;
        if (eocd - k < 46 || rd_le32(zip + k) != 0x02014b50u) { ki_fmt(err, errcap, "%s: bad zip central directory entry", path); return NULL; }
        method = rd_le16(zip + k + 10);
        crc = rd_le32(zip + k + 16);
        csize = rd_le32(zip + k + 20);
        usize = rd_le32(zip + k + 24);
        fnl = rd_le16(zip + k + 28); xl = rd_le16(zip + k + 30); cl = rd_le16(zip + k + 32);
        lho = rd_le32(zip + k + 42);
        if (eocd - k - 46 < (size_t)fnl + xl + cl) { ki_fmt(err, errcap, "%s: bad zip central directory entry", path); return NULL; }
        if (fnl == nl && memcmp(zip + k + 46, name, nl) == 0) {
            size_t data;
            if (csize == 0xffffffffu || usize == 0xffffffffu || lho == 0xffffffffu) { ki_fmt(err, errcap, "%s: %s is a zip64 member (not read here)", path, name); return NULL; }
            if (usize > KI_MAX_MEMBER) { ki_fmt(err, errcap, "%s: %s is larger than %u MiB", path, name, KI_MAX_MEMBER >> 20); return NULL; }
            if (n < 30 || lho > n - 30 || rd_le32(zip + lho) != 0x04034b50u) { ki_fmt(err, errcap, "%s: bad local header for %s", path, name); return NULL; }
            data = (size_t)lho + 30 + rd_le16(zip + lho + 26) + rd_le16(zip + lho + 28);
            if (data > n || n - data < csize) { ki_fmt(err, errcap, "%s: %s is truncated", path, name); return NULL; }
            if (method == 0) {
                if (csize != usize) { ki_fmt(err, errcap, "%s: %s: stored sizes differ", path, name); return NULL; }
                out = (unsigned char *)malloc(usize ? usize : 1);
                if (!out) { ki_fmt(err, errcap, "out of memory"); return NULL; }
                memcpy(out, zip + data, usize);
                *len = usize;
            } else if (method == 8) {
                out = zi_inflate(zip + data, csize, usize, len);
                if (!out || *len != usize) { free(out); ki_fmt(err, errcap, "%s: %s does not inflate", path, name); return NULL; }
            } else {
                ki_fmt(err, errcap, "%s: %s uses compression method %u (zipimport reads stored and deflated only)", path, name, method);
                return NULL;
            }
            if (zi_crc32(out, *len) != crc) { free(out); ki_fmt(err, errcap, "%s: %s fails its CRC-32", path, name); return NULL; }
            return out;
        }
        k += 46 + (size_t)fnl + xl + cl;
    }
    ki_fmt(err, errcap, "%s has no member %s", path, name);
    return NULL;
}

/* Reads member name of the zip archive at path; as zip_member_mem. */
unsigned char *zip_member(const char *path, const char *name, size_t *len, char *err, size_t errcap)
{
    size_t n = 0;
    unsigned char *zip = ki_slurp(path, (size_t)KI_MAX_FILE * 4, &n), *out;
    if (!zip) { ki_fmt(err, errcap, "cannot read %s (or larger than %u MiB)", path, (KI_MAX_FILE >> 20) * 4); return NULL; }
    out = zip_member_mem(zip, n, path, name, len, err, errcap);
    free(zip);
    return out;
}
