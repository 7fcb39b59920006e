/* eng_safetensors.c: safetensors reading (with HF name mapping) and writing. */
#define _POSIX_C_SOURCE 200809L
#define _FILE_OFFSET_BITS 64
#include "eng_safetensors.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_HEADER (256LL << 20)

struct st_shard {
    char *path;
    FILE *fp;
    json_t *header;
    uint64_t data_start, data_len;
};

struct st_file {
    struct st_shard *shards;
    int n;
    char *path;
};

static int dtype_size(const char *dt)
{
    if (strcmp(dt, "BF16") == 0 || strcmp(dt, "F16") == 0)
        return 2;
    if (strcmp(dt, "F32") == 0)
        return 4;
    return 0;
}

/* Validates every tensor entry of a parsed header against the data section. */
static int check_entries(const char *name, json_t *root, uint64_t data_len, struct ts_err *err)
{
    if (!json_is_object(root))
        return ts_fail(err, "%s: header is not a JSON object", name);
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (strcmp(key, "__metadata__") == 0)
            continue;
        json_t *dt = json_object_get(v, "dtype"), *shape = json_object_get(v, "shape");
        json_t *offs = json_object_get(v, "data_offsets");
        if (!json_is_object(v) || !json_is_string(dt) || !json_is_array(shape) || !json_is_array(offs) ||
            json_array_size(offs) != 2)
            return ts_fail(err, "%s: tensor '%s': needs dtype, shape and data_offsets", name, key);
        uint64_t elems = 1;
        for (size_t i = 0; i < json_array_size(shape); i++) {
            json_t *s = json_array_get(shape, i);
            if (!json_is_integer(s) || json_integer_value(s) < 0 || json_integer_value(s) > (1LL << 40))
                return ts_fail(err, "%s: tensor '%s': bad shape", name, key);
            uint64_t dim = (uint64_t)json_integer_value(s);
            if (dim && elems > (1ULL << 50) / dim)
                return ts_fail(err, "%s: tensor '%s': shape too large", name, key);
            elems *= dim;
        }
        json_t *b = json_array_get(offs, 0), *e = json_array_get(offs, 1);
        if (!json_is_integer(b) || !json_is_integer(e) || json_integer_value(b) < 0 ||
            json_integer_value(e) < json_integer_value(b))
            return ts_fail(err, "%s: tensor '%s': bad data_offsets", name, key);
        uint64_t begin = (uint64_t)json_integer_value(b), end = (uint64_t)json_integer_value(e);
        if (end > data_len)
            return ts_fail(err, "%s: tensor '%s': data [%llu, %llu) lies outside the file's %llu data "
                                "bytes (truncated?)", name, key, (unsigned long long)begin,
                           (unsigned long long)end, (unsigned long long)data_len);
        int ds = dtype_size(json_string_value(dt));
        if (ds && end - begin != elems * (uint64_t)ds)
            return ts_fail(err, "%s: tensor '%s': %llu data bytes for %llu elements of %s", name, key,
                           (unsigned long long)(end - begin), (unsigned long long)elems,
                           json_string_value(dt));
    }
    return 0;
}

int st_check_header(const char *name, const char *json, size_t len, uint64_t data_len,
                    struct ts_err *err)
{
    json_error_t jerr;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return ts_fail(err, "%s: header: %s", name, jerr.text);
    int rc = check_entries(name, root, data_len, err);
    json_decref(root);
    return rc;
}

static int open_shard(const char *path, struct st_shard *s, struct ts_err *err)
{
    memset(s, 0, sizeof *s);
    s->path = xstrdup(path);
    s->fp = fopen(path, "rb");
    if (!s->fp)
        return ts_fail(err, "%s: cannot open: %s", path, strerror(errno));
    unsigned char lenb[8];
    if (fread(lenb, 1, 8, s->fp) != 8)
        return ts_fail(err, "%s: not a safetensors file (shorter than its 8-byte header length)", path);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = (hlen << 8) | lenb[i];
    struct stat sb;
    if (fstat(fileno(s->fp), &sb) != 0)
        return ts_fail(err, "%s: cannot stat", path);
    if (hlen == 0 || hlen > (uint64_t)MAX_HEADER || 8 + hlen > (uint64_t)sb.st_size)
        return ts_fail(err, "%s: header length %llu does not fit the file (%lld bytes)", path,
                       (unsigned long long)hlen, (long long)sb.st_size);
    char *txt = xmalloc(hlen + 1);
    if (fread(txt, 1, hlen, s->fp) != hlen) {
        free(txt);
        return ts_fail(err, "%s: truncated header", path);
    }
    json_error_t jerr;
    s->header = json_loadb(txt, hlen, JSON_REJECT_DUPLICATES, &jerr);
    free(txt);
    if (!s->header)
        return ts_fail(err, "%s: header: %s", path, jerr.text);
    s->data_start = 8 + hlen;
    s->data_len = (uint64_t)sb.st_size - s->data_start;
    return check_entries(path, s->header, s->data_len, err);
}

static bool has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int st_open(const char *path, struct st_file **out, struct ts_err *err)
{
    *out = NULL;
    struct st_file *f = xcalloc(1, sizeof *f);
    f->path = xstrdup(path);
    char **files = NULL;
    size_t nfiles = 0, cap = 0;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        free(f->path);
        free(f);
        return ts_fail(err, "%s: cannot open: %s", path, strerror(errno));
    }
    if (S_ISDIR(sb.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *de;
        while (d && (de = readdir(d))) {
            if (!has_suffix(de->d_name, ".safetensors"))
                continue;
            ts_grow((void **)&files, &cap, nfiles + 1, sizeof *files);
            size_t n = strlen(path) + strlen(de->d_name) + 2;
            files[nfiles] = xmalloc(n);
            snprintf(files[nfiles++], n, "%s/%s", path, de->d_name);
        }
        if (d)
            closedir(d);
        qsort(files, nfiles, sizeof *files, cmp_str);
    } else {
        files = xmalloc(sizeof *files);
        files[nfiles++] = xstrdup(path);
    }
    int rc = nfiles ? 0 : ts_fail(err, "%s: no .safetensors files in the directory", path);
    f->shards = xcalloc(nfiles ? nfiles : 1, sizeof *f->shards);
    for (size_t i = 0; i < nfiles; i++) {
        if (!rc)
            rc = open_shard(files[i], &f->shards[f->n++], err);
        free(files[i]);
    }
    free(files);
    if (rc) {
        st_close(f);
        return -1;
    }
    *out = f;
    return 0;
}

void st_close(struct st_file *f)
{
    if (!f)
        return;
    for (int i = 0; i < f->n; i++) {
        if (f->shards[i].fp)
            fclose(f->shards[i].fp);
        json_decref(f->shards[i].header);
        free(f->shards[i].path);
    }
    free(f->shards);
    free(f->path);
    free(f);
}

static json_t *find(struct st_file *f, const char *name, struct st_shard **shard)
{
    for (int i = 0; i < f->n; i++) {
        json_t *v = json_object_get(f->shards[i].header, name);
        if (v) {
            *shard = &f->shards[i];
            return v;
        }
    }
    return NULL;
}

static float half_to_float(uint16_t h)
{
    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff, u;
    if (e == 0) {
        if (m == 0)
            u = s;
        else { /* subnormal */
            e = 127 - 15 + 1;
            while (!(m & 0x400)) {
                m <<= 1;
                e--;
            }
            u = s | (e << 23) | ((m & 0x3ff) << 13);
        }
    } else if (e == 31) {
        u = s | 0x7f800000u | (m << 13);
    } else {
        u = s | ((e + 127 - 15) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Reads tensor `name` of exactly rows x cols (cols 0: a vector of rows) into dst as bf16. */
static int read_part(struct st_file *f, const char *name, int64_t rows, int64_t cols, bf16_t *dst,
                     struct ts_err *err)
{
    struct st_shard *sh;
    json_t *v = find(f, name, &sh);
    if (!v)
        return ts_fail(err, "%s: tensor '%s' is missing", f->path, name);
    json_t *shape = json_object_get(v, "shape");
    const char *dt = json_string_value(json_object_get(v, "dtype"));
    size_t nd = json_array_size(shape);
    int64_t d0 = nd > 0 ? json_integer_value(json_array_get(shape, 0)) : -1;
    int64_t d1 = nd > 1 ? json_integer_value(json_array_get(shape, 1)) : 0;
    if (!((cols == 0 && nd == 1 && d0 == rows) || (cols > 0 && nd == 2 && d0 == rows && d1 == cols)))
        return ts_fail(err, "%s: tensor '%s': shape [%lld%s%lld] but the model needs [%lld%s%lld]",
                       sh->path, name, (long long)d0, nd > 1 ? ", " : "", (long long)(nd > 1 ? d1 : 0),
                       (long long)rows, cols ? ", " : "", (long long)cols);
    int ds = dtype_size(dt);
    if (!ds)
        return ts_fail(err, "%s: tensor '%s': dtype %s (BF16, F16 or F32 expected)", sh->path, name, dt);
    int64_t n = rows * (cols ? cols : 1);
    uint64_t begin = (uint64_t)json_integer_value(json_array_get(json_object_get(v, "data_offsets"), 0));
    if (fseeko(sh->fp, (off_t)(sh->data_start + begin), SEEK_SET) != 0)
        return ts_fail(err, "%s: tensor '%s': seek failed", sh->path, name);
    if (ds == 2 && strcmp(dt, "BF16") == 0) {
        if (fread(dst, 2, (size_t)n, sh->fp) != (size_t)n)
            return ts_fail(err, "%s: tensor '%s': short read", sh->path, name);
        return 0;
    }
    enum { CHUNK = 1 << 16 };
    unsigned char *buf = xmalloc((size_t)CHUNK * ds);
    for (int64_t i = 0; i < n; i += CHUNK) {
        size_t k = (size_t)TS_MIN((int64_t)CHUNK, n - i);
        if (fread(buf, (size_t)ds, k, sh->fp) != k) {
            free(buf);
            return ts_fail(err, "%s: tensor '%s': short read", sh->path, name);
        }
        for (size_t j = 0; j < k; j++) {
            float x;
            if (ds == 4)
                memcpy(&x, buf + 4 * j, 4);
            else {
                uint16_t hv;
                memcpy(&hv, buf + 2 * j, 2);
                x = half_to_float(hv);
            }
            dst[i + (int64_t)j] = eng_f2bf(x);
        }
    }
    free(buf);
    return 0;
}

static bool llada_names(struct st_file *f)
{
    struct st_shard *sh;
    return find(f, "model.transformer.wte.weight", &sh) != NULL;
}

int st_load_tensor(struct st_file *f, const struct model_cfg *m, const struct eng_tensor *t,
                   bf16_t *dst, struct ts_err *err)
{
    const bool ll = llada_names(f);
    const int L = t->layer;
    const int64_t h = m->hidden, qd = (int64_t)m->num_heads * m->head_dim;
    const int64_t kvd = (int64_t)m->num_kv_heads * m->head_dim, F = m->ffn;
    char a[160], b[160], c[160];
    const char *pre = ll ? "model.transformer.blocks" : "model.layers";
    if (m->num_experts > 0)
        return ts_fail(err, "%s: %s is a mixture of experts, whose checkpoints the engine does not read yet (it "
                            "runs such models on random weights)", f->path, m->name);
    switch (t->kind) {
    case W_EMB:
        return read_part(f, ll ? "model.transformer.wte.weight" : "model.embed_tokens.weight", m->vocab, h, dst, err);
    case W_FINAL_NORM:
        return read_part(f, ll ? "model.transformer.ln_f.weight" : "model.norm.weight", h, 0, dst, err);
    case W_LM: {
        struct st_shard *sh;
        const char *name = ll ? "model.transformer.ff_out.weight" : "lm_head.weight";
        if (!ll && !find(f, name, &sh)) /* tied embeddings */
            name = "model.embed_tokens.weight";
        return read_part(f, name, m->vocab, h, dst, err);
    }
    case W_ATTN_NORM:
        snprintf(a, sizeof a, ll ? "%s.%d.attn_norm.weight" : "%s.%d.input_layernorm.weight", pre, L);
        return read_part(f, a, h, 0, dst, err);
    case W_FFN_NORM:
        snprintf(a, sizeof a, ll ? "%s.%d.ff_norm.weight" : "%s.%d.post_attention_layernorm.weight", pre, L);
        return read_part(f, a, h, 0, dst, err);
    case W_O:
        snprintf(a, sizeof a, ll ? "%s.%d.attn_out.weight" : "%s.%d.self_attn.o_proj.weight", pre, L);
        return read_part(f, a, h, qd, dst, err);
    case W_DOWN:
        snprintf(a, sizeof a, ll ? "%s.%d.ff_out.weight" : "%s.%d.mlp.down_proj.weight", pre, L);
        return read_part(f, a, h, F, dst, err);
    case W_QKV:
    case W_QKV_BIAS: {
        const char *sfx = t->kind == W_QKV ? "weight" : "bias";
        const char *fmt = ll ? "%s.%d.%c_proj.%s" : "%s.%d.self_attn.%c_proj.%s";
        snprintf(a, sizeof a, fmt, pre, L, 'q', sfx);
        snprintf(b, sizeof b, fmt, pre, L, 'k', sfx);
        snprintf(c, sizeof c, fmt, pre, L, 'v', sfx);
        int64_t cols = t->kind == W_QKV ? h : 0, w = cols ? cols : 1;
        return read_part(f, a, qd, cols, dst, err) || read_part(f, b, kvd, cols, dst + qd * w, err) ||
               read_part(f, c, kvd, cols, dst + (qd + kvd) * w, err) ? -1 : 0;
    }
    case W_GU:
        snprintf(a, sizeof a, ll ? "%s.%d.ff_proj.weight" : "%s.%d.mlp.gate_proj.weight", pre, L);
        snprintf(b, sizeof b, ll ? "%s.%d.up_proj.weight" : "%s.%d.mlp.up_proj.weight", pre, L);
        return read_part(f, a, F, h, dst, err) || read_part(f, b, F, h, dst + F * h, err) ? -1 : 0;
    default:
        return ts_fail(err, "%s: no mapping for %s", f->path, eng_w_kind_name(t->kind));
    }
}

int st_export_hf(const char *path, const struct model_cfg *m, const bf16_t *w, bool llada, bool tied,
                 struct ts_err *err)
{
    struct eng_layout l;
    if (eng_layout_build(m, &l, err))
        return -1;
    const int cap = 16 * m->num_layers + 8;
    char **names = xcalloc((size_t)cap, sizeof *names);
    int64_t *rows = xcalloc((size_t)cap, sizeof *rows), *cols = xcalloc((size_t)cap, sizeof *cols);
    const bf16_t **data = xcalloc((size_t)cap, sizeof *data);
    int n = 0;
    const int64_t h = m->hidden, qd = (int64_t)m->num_heads * m->head_dim;
    const int64_t kvd = (int64_t)m->num_kv_heads * m->head_dim, F = m->ffn;
#define PUT(r, c, ptr, ...)                                                                        \
    do {                                                                                           \
        char nm_[160];                                                                             \
        snprintf(nm_, sizeof nm_, __VA_ARGS__);                                                    \
        names[n] = xstrdup(nm_), rows[n] = (r), cols[n] = (c), data[n++] = (ptr);                  \
    } while (0)
    PUT(m->vocab, h, w + eng_layout_find(&l, W_EMB, -1)->offset, "%s",
        llada ? "model.transformer.wte.weight" : "model.embed_tokens.weight");
    const char *pre = llada ? "model.transformer.blocks" : "model.layers", *attn = llada ? "" : "self_attn.";
    for (int L = 0; L < m->num_layers; L++) {
        const bf16_t *qkv = w + eng_layout_find(&l, W_QKV, L)->offset, *gu = w + eng_layout_find(&l, W_GU, L)->offset;
        PUT(qd, h, qkv, "%s.%d.%sq_proj.weight", pre, L, attn);
        PUT(kvd, h, qkv + qd * h, "%s.%d.%sk_proj.weight", pre, L, attn);
        PUT(kvd, h, qkv + (qd + kvd) * h, "%s.%d.%sv_proj.weight", pre, L, attn);
        const struct eng_tensor *b = eng_layout_find(&l, W_QKV_BIAS, L);
        if (b) {
            PUT(qd, 0, w + b->offset, "%s.%d.%sq_proj.bias", pre, L, attn);
            PUT(kvd, 0, w + b->offset + qd, "%s.%d.%sk_proj.bias", pre, L, attn);
            PUT(kvd, 0, w + b->offset + qd + kvd, "%s.%d.%sv_proj.bias", pre, L, attn);
        }
        PUT(h, qd, w + eng_layout_find(&l, W_O, L)->offset, llada ? "%s.%d.attn_out.weight" : "%s.%d.self_attn.o_proj.weight", pre, L);
        PUT(h, 0, w + eng_layout_find(&l, W_ATTN_NORM, L)->offset, llada ? "%s.%d.attn_norm.weight" : "%s.%d.input_layernorm.weight", pre, L);
        PUT(h, 0, w + eng_layout_find(&l, W_FFN_NORM, L)->offset, llada ? "%s.%d.ff_norm.weight" : "%s.%d.post_attention_layernorm.weight", pre, L);
        PUT(F, h, gu, llada ? "%s.%d.ff_proj.weight" : "%s.%d.mlp.gate_proj.weight", pre, L);
        PUT(F, h, gu + F * h, llada ? "%s.%d.up_proj.weight" : "%s.%d.mlp.up_proj.weight", pre, L);
        PUT(h, F, w + eng_layout_find(&l, W_DOWN, L)->offset, llada ? "%s.%d.ff_out.weight" : "%s.%d.mlp.down_proj.weight", pre, L);
    }
    PUT(h, 0, w + eng_layout_find(&l, W_FINAL_NORM, -1)->offset, "%s", llada ? "model.transformer.ln_f.weight" : "model.norm.weight");
    if (!tied)
        PUT(m->vocab, h, w + eng_layout_find(&l, W_LM, -1)->offset, "%s", llada ? "model.transformer.ff_out.weight" : "lm_head.weight");
#undef PUT
    int rc = st_write_bf16(path, n, (const char *const *)names, rows, cols, data, err);
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names), free(rows), free(cols), free(data);
    eng_layout_free(&l);
    return rc;
}

int st_write_bf16(const char *path, int n, const char *const *names, const int64_t *rows,
                  const int64_t *cols, const bf16_t *const *data, struct ts_err *err)
{
    json_t *hdr = json_object();
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        int64_t elems = rows[i] * (cols[i] ? cols[i] : 1);
        json_t *shape = cols[i] ? json_pack("[I,I]", (json_int_t)rows[i], (json_int_t)cols[i])
                                : json_pack("[I]", (json_int_t)rows[i]);
        json_object_set_new(hdr, names[i], json_pack("{s:s,s:o,s:[I,I]}", "dtype", "BF16", "shape", shape,
                                                     "data_offsets", (json_int_t)off,
                                                     (json_int_t)(off + 2 * (uint64_t)elems)));
        off += 2 * (uint64_t)elems;
    }
    char *txt = json_dumps(hdr, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(hdr);
    size_t hl = strlen(txt), padded = (hl + 7) / 8 * 8;
    FILE *fp = fopen(path, "wb");
    if (!fp) {
        free(txt);
        return ts_fail(err, "%s: cannot create", path);
    }
    unsigned char lenb[8];
    for (int i = 0; i < 8; i++)
        lenb[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    fwrite(lenb, 1, 8, fp);
    fwrite(txt, 1, hl, fp);
    for (size_t i = hl; i < padded; i++)
        fputc(' ', fp);
    for (int i = 0; i < n; i++)
        fwrite(data[i], 2, (size_t)(rows[i] * (cols[i] ? cols[i] : 1)), fp);
    free(txt);
    if (fclose(fp) != 0)
        return ts_fail(err, "%s: write error", path);
    return 0;
}
