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

/* The family of names a checkpoint uses: LLaDA's own, LLaDA2.0's (a fused query_key_value) or the
 * LLaMA/Qwen names of the others (Dream, SDAR, LLaDA-MoE). */
static enum st_names names_of(struct st_file *f)
{
    struct st_shard *sh;
    if (find(f, "model.transformer.wte.weight", &sh))
        return ST_NAMES_LLADA;
    return find(f, "model.word_embeddings.weight", &sh) ? ST_NAMES_LLADA2 : ST_NAMES_QWEN;
}

/* One checkpoint tensor of an engine tensor: its name, its shape (cols 0: a vector) and where it
 * goes, `at` elements into the engine tensor. */
struct st_piece {
    char name[160];
    int64_t rows, cols, at;
};

/* The checkpoint tensors that make engine tensor t of model m under names `fam`, in the order of
 * the engine's layout, into p (room for 2 E + 3); returns how many, or -1 for a tensor the family
 * has no name for. */
static int pieces_of(enum st_names fam, const struct model_cfg *m, const struct eng_tensor *t, struct st_piece *p)
{
    const int L = t->layer;
    const int64_t h = m->hidden, d = m->head_dim, qd = (int64_t)m->num_heads * d;
    const int64_t kvd = (int64_t)m->num_kv_heads * d, F = L >= 0 ? eng_ffn_width(m, L) : 0, Fe = m->moe_ffn;
    const bool ll = fam == ST_NAMES_LLADA, l2 = fam == ST_NAMES_LLADA2;
    const char *pre = ll ? "model.transformer.blocks" : "model.layers";
    const char *attn = ll ? "" : l2 ? "attention." : "self_attn.";
    int n = 0;
#define PIECE(r, c, off, ...)                                                                      \
    do {                                                                                           \
        snprintf(p[n].name, sizeof p[n].name, __VA_ARGS__);                                        \
        p[n].rows = (r), p[n].cols = (c), p[n++].at = (off);                                       \
    } while (0)
    switch (t->kind) {
    case W_EMB:
        PIECE(m->vocab, h, 0, "%s", ll ? "model.transformer.wte.weight" : l2 ? "model.word_embeddings.weight"
                                                                            : "model.embed_tokens.weight");
        break;
    case W_FINAL_NORM:
        PIECE(h, 0, 0, "%s", ll ? "model.transformer.ln_f.weight" : "model.norm.weight");
        break;
    case W_LM:
        PIECE(m->vocab, h, 0, "%s", ll ? "model.transformer.ff_out.weight" : "lm_head.weight");
        break;
    case W_ATTN_NORM:
        PIECE(h, 0, 0, ll ? "%s.%d.attn_norm.weight" : "%s.%d.input_layernorm.weight", pre, L);
        break;
    case W_FFN_NORM:
        PIECE(h, 0, 0, ll ? "%s.%d.ff_norm.weight" : "%s.%d.post_attention_layernorm.weight", pre, L);
        break;
    case W_O:
        PIECE(h, qd, 0,
              ll ? "%s.%d.attn_out.weight" : l2 ? "%s.%d.attention.dense.weight" : "%s.%d.self_attn.o_proj.weight", pre,
              L);
        break;
    case W_QKV:
    case W_QKV_BIAS: {
        const char *sfx = t->kind == W_QKV ? "weight" : "bias";
        const int64_t cols = t->kind == W_QKV ? h : 0, w = cols ? cols : 1;
        if (l2) {
            PIECE(qd + 2 * kvd, cols, 0, "%s.%d.attention.query_key_value.%s", pre, L, sfx);
            break;
        }
        PIECE(qd, cols, 0, "%s.%d.%sq_proj.%s", pre, L, attn, sfx);
        PIECE(kvd, cols, qd * w, "%s.%d.%sk_proj.%s", pre, L, attn, sfx);
        PIECE(kvd, cols, (qd + kvd) * w, "%s.%d.%sv_proj.%s", pre, L, attn, sfx);
        break;
    }
    case W_Q_NORM:
    case W_K_NORM:
        if (ll)
            return -1;
        if (l2)
            PIECE(d, 0, 0, "%s.%d.attention.%s_layernorm.weight", pre, L, t->kind == W_Q_NORM ? "query" : "key");
        else
            PIECE(d, 0, 0, "%s.%d.self_attn.%c_norm.weight", pre, L, t->kind == W_Q_NORM ? 'q' : 'k');
        break;
    case W_GU: {
        /* a MoE layer's gate|up and down are its shared experts', one FFN of their widths */
        const char *mlp = model_is_moe_layer(m, L) ? "mlp.shared_experts" : "mlp";
        PIECE(F, h, 0, ll ? "%s.%d.ff_proj.weight" : "%s.%d.%s.gate_proj.weight", pre, L, mlp);
        PIECE(F, h, F * h, ll ? "%s.%d.up_proj.weight" : "%s.%d.%s.up_proj.weight", pre, L, mlp);
        break;
    }
    case W_DOWN:
        PIECE(h, F, 0, ll ? "%s.%d.ff_out.weight" : "%s.%d.%s.down_proj.weight", pre, L,
              model_is_moe_layer(m, L) ? "mlp.shared_experts" : "mlp");
        break;
    case W_ROUTER:
        if (ll)
            return -1;
        PIECE(m->num_experts, h, 0, "%s.%d.mlp.gate.weight", pre, L);
        break;
    case W_ROUTER_BIAS:
        if (ll)
            return -1;
        PIECE(m->num_experts, 0, 0, "%s.%d.mlp.gate.expert_bias", pre, L);
        break;
    case W_EXP_GU:
    case W_EXP_DOWN:
        if (ll)
            return -1;
        for (int e = 0; e < m->num_experts; e++)
            if (t->kind == W_EXP_GU) {
                PIECE(Fe, h, e * 2 * Fe * h, "%s.%d.mlp.experts.%d.gate_proj.weight", pre, L, e);
                PIECE(Fe, h, e * 2 * Fe * h + Fe * h, "%s.%d.mlp.experts.%d.up_proj.weight", pre, L, e);
            } else {
                PIECE(h, Fe, e * h * Fe, "%s.%d.mlp.experts.%d.down_proj.weight", pre, L, e);
            }
        break;
    default:
        return -1;
    }
#undef PIECE
    return n;
}

/* Room for pieces_of's pieces of any tensor of model m. */
static struct st_piece *pieces_alloc(const struct model_cfg *m)
{
    return xmalloc(sizeof(struct st_piece) * (2 * (size_t)m->num_experts + 3));
}

/* pieces_of, or -1 with a message naming the checkpoint (path) where the family has no names for t. */
static int pieces_named(enum st_names fam, const char *path, const struct model_cfg *m, const struct eng_tensor *t,
                        struct st_piece *p, struct ts_err *err)
{
    const int n = pieces_of(fam, m, t, p);
    if (n < 0)
        ts_fail(err, "%s: the %s names have no tensor for %s's %s", path,
                fam == ST_NAMES_LLADA ? "LLaDA" : "Hugging Face", m->name, eng_w_kind_name(t->kind));
    return n;
}

int st_load_tensor(struct st_file *f, const struct model_cfg *m, const struct eng_tensor *t,
                   bf16_t *dst, struct ts_err *err)
{
    const enum st_names fam = names_of(f);
    struct st_piece *p = pieces_alloc(m);
    const int n = pieces_named(fam, f->path, m, t, p, err);
    int rc = n < 0 ? -1 : 0;
    struct st_shard *sh;
    if (n == 1 && t->kind == W_LM && fam != ST_NAMES_LLADA && !find(f, p[0].name, &sh)) /* tied embeddings */
        snprintf(p[0].name, sizeof p[0].name, "%s",
                 fam == ST_NAMES_LLADA2 ? "model.word_embeddings.weight" : "model.embed_tokens.weight");
    for (int i = 0; i < n && rc == 0; i++)
        rc = read_part(f, p[i].name, p[i].rows, p[i].cols, dst + p[i].at, err);
    free(p);
    return rc;
}

int st_export_hf(const char *path, const struct model_cfg *m, const bf16_t *w, enum st_names fam, bool tied,
                 struct ts_err *err)
{
    struct eng_layout l;
    if (eng_layout_build(m, &l, err))
        return -1;
    struct st_piece *p = pieces_alloc(m);
    int cap = 0, n = 0, rc = 0;
    char **names = NULL;
    int64_t *rows = NULL, *cols = NULL;
    const bf16_t **data = NULL;
    for (int i = 0; i < l.n && rc == 0; i++) {
        const struct eng_tensor *t = &l.t[i];
        if (t->kind == W_LM && tied)
            continue;
        const int k = pieces_named(fam, path, m, t, p, err);
        if (k < 0) {
            rc = -1;
            break;
        }
        if (n + k > cap) {
            cap = 2 * (n + k);
            names = xrealloc(names, sizeof *names * (size_t)cap), rows = xrealloc(rows, sizeof *rows * (size_t)cap);
            cols = xrealloc(cols, sizeof *cols * (size_t)cap), data = xrealloc(data, sizeof *data * (size_t)cap);
        }
        for (int j = 0; j < k; j++, n++)
            names[n] = xstrdup(p[j].name), rows[n] = p[j].rows, cols[n] = p[j].cols, data[n] = w + t->offset + p[j].at;
    }
    if (rc == 0)
        rc = st_write_bf16(path, n, (const char *const *)names, rows, cols, data, err);
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names), free(rows), free(cols), free(data), free(p);
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
