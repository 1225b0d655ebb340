/* The compiled tokenizer of `key: value` lines (loganalyze/formats/fields.py, key_columns).
 *
 * A line kind declares its keys (loganalyze/formats/spec.py, Key): this module reads the values of
 * those keys out of a batch of message bodies in one pass per line, and the unknown
 * `, key: value` pairs of kinds with `extra`. It knows no format: the keys and the
 * separator come from the declarations, each call.
 *
 * What it finds, per line, is what these regexes find (docs/speed.md):
 *   a key:   (?:^|[,.] )KEY SEP ([^ ,]+?)\.?(?:[ ,]|$)      the first match, group 1
 *   a pair:  [,.] [#A-Za-z][^:,]*?: [^ ,]+                  every match, left to right
 * A key's value is the run of bytes up to the next space or comma, less one final dot
 * when the run is longer than one byte; a key whose run is empty is looked for further on.
 *
 * Input comes from outside (any log): every read is bounded by the line's length, the
 * Arrow offsets are checked before use, nothing recurses, and sizes are checked before
 * they grow. The work runs without the GIL, so two parser threads tokenize side by side.
 * Output is Arrow buffers (validity bitmaps, int64 offsets, bytes) for large_string and
 * list<struct<key, value>> arrays; loganalyze/formats/fields.py turns them into polars columns.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *data;
    size_t len, cap;
} Buf;

/* Append `n` bytes; 0 when memory runs out. */
static int buf_put(Buf *b, const void *src, size_t n) {
    if (n > SIZE_MAX - b->len) return 0;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) {
            if (cap > SIZE_MAX / 2) return 0;
            cap *= 2;
        }
        char *grown = realloc(b->data, cap);
        if (!grown) return 0;
        b->data = grown;
        b->cap = cap;
    }
    if (n) memcpy(b->data + b->len, src, n);
    b->len += n;
    return 1;
}

/* One large_string column being built: validity (one byte per row until the end),
 * offsets (n + 1), data. */
typedef struct {
    int64_t *offsets;
    uint8_t *valid;
    Buf data;
    Py_ssize_t hits;
} Column;

static void column_free(Column *c) {
    free(c->offsets);
    free(c->valid);
    free(c->data.data);
}

/* Row `row` gets `value` (NULL: a null). */
static int column_set(Column *c, Py_ssize_t row, const char *value, size_t len) {
    if (value) {
        if (!buf_put(&c->data, value, len)) return 0;
        c->valid[row] = 1;
        c->hits++;
    }
    c->offsets[row + 1] = (int64_t)c->data.len;
    return 1;
}

/* Where one key was found: (row, start in the input data, length) per hit, in row order.
 * Most declared keys are absent from most lines: a key costs nothing until it is found. */
typedef struct {
    Py_ssize_t *rows;
    size_t *starts, *lens, n, cap;
} Hits;

static int hits_add(Hits *h, Py_ssize_t row, size_t start, size_t len) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 1024;
        if (cap > SIZE_MAX / sizeof(size_t)) return 0;
        Py_ssize_t *rows = realloc(h->rows, cap * sizeof(Py_ssize_t));
        if (!rows) return 0;
        h->rows = rows;
        size_t *starts = realloc(h->starts, cap * sizeof(size_t));
        if (!starts) return 0;
        h->starts = starts;
        size_t *lens = realloc(h->lens, cap * sizeof(size_t));
        if (!lens) return 0;
        h->lens = lens;
        h->cap = cap;
    }
    h->rows[h->n] = row;
    h->starts[h->n] = start;
    h->lens[h->n] = len;
    h->n++;
    return 1;
}

static void hits_free(Hits *h) {
    free(h->rows);
    free(h->starts);
    free(h->lens);
}

typedef struct {
    const char *text;
    size_t len;
    uint64_t head, mask; /* its first 8 bytes (fewer: masked), to rule out most places in one compare */
} Needle;

/* Up to 8 bytes of `s` from `p` as one word, zeros past the end. */
static uint64_t word_at(const char *s, size_t len, size_t p) {
    uint64_t w = 0;
    memcpy(&w, s + p, len - p < 8 ? len - p : 8);
    return w;
}

typedef struct {
    /* input */
    Py_ssize_t n, offset;
    const uint8_t *in_valid; /* may be NULL: no nulls */
    const int64_t *in_offsets;
    const char *in_data;
    Py_ssize_t in_data_len;
    Needle *needles; /* key + separator, in the kind's order */
    Py_ssize_t n_keys;
    Needle *known; /* the kind's keys, left out of the pairs */
    Py_ssize_t n_known;
    int extra;
    /* output */
    Hits *keys;
    int64_t *list_offsets; /* n + 1, when extra */
    uint8_t *list_valid;
    Column pair_key, pair_value;
    Py_ssize_t pairs;
    size_t cap_pairs;
    int ok;
    /* scratch */
    size_t *starts, n_starts, cap_starts;
    Py_ssize_t first_head[256], empty_head, *next_key; /* keys by first byte, in order */
    const char **found;
    size_t *found_len;
} Job;

static int is_stop(char c) { return c == ' ' || c == ','; }

static int is_key_start(char c) { return c == '#' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

/* The value that starts at `at`: its length, or -1 when its run is empty. */
static Py_ssize_t value_len(const char *s, size_t len, size_t at) {
    size_t end = at;
    while (end < len && !is_stop(s[end])) end++;
    size_t run = end - at;
    if (run == 0) return -1;
    if (run > 1 && s[end - 1] == '.') run--;
    return (Py_ssize_t)run;
}

/* Where a key may start: the line's start, and behind every ", " or ". ". */
static int find_starts(Job *job, const char *s, size_t len) {
    job->n_starts = 0;
    for (size_t p = 0; p <= len; p++) {
        if (p != 0) {
            const char *space = p - 1 < len ? memchr(s + p - 1, ' ', len - (p - 1)) : NULL;
            if (!space) break;
            p = (size_t)(space - s) + 1; /* the byte behind the space */
            if (!(p >= 2 && (s[p - 2] == ',' || s[p - 2] == '.'))) continue;
        }
        if (job->n_starts == job->cap_starts) {
            size_t cap = job->cap_starts ? job->cap_starts * 2 : 64;
            size_t *grown = cap > SIZE_MAX / sizeof(size_t) ? NULL : realloc(job->starts, cap * sizeof(size_t));
            if (!grown) return 0;
            job->starts = grown;
            job->cap_starts = cap;
        }
        job->starts[job->n_starts++] = p;
    }
    return 1;
}

/* Each key's value at the first start where the key, its separator and a value stand.
 * At a start, only the keys whose first byte is the byte there are compared. */
static int find_keys(Job *job, Py_ssize_t row, const char *s, size_t len) {
    const char **found = job->found;
    size_t *found_len = job->found_len;
    Py_ssize_t left = job->n_keys;
    for (Py_ssize_t k = 0; k < job->n_keys; k++) found[k] = NULL;
    for (size_t i = 0; i < job->n_starts && left; i++) {
        size_t p = job->starts[i];
        uint64_t word = 0;
        int have_word = 0;
        for (int pass = 0; pass < 2; pass++) {
            Py_ssize_t k = pass == 0 ? job->empty_head : (p < len ? job->first_head[(uint8_t)s[p]] : -1);
            for (; k >= 0; k = job->next_key[k]) {
                const Needle *nd = &job->needles[k];
                if (found[k] || nd->len > len - p) continue;
                if (!have_word) {
                    word = word_at(s, len, p);
                    have_word = 1;
                }
                if ((word & nd->mask) != nd->head || (nd->len > 8 && memcmp(s + p + 8, nd->text + 8, nd->len - 8) != 0))
                    continue;
                Py_ssize_t v = value_len(s, len, p + nd->len);
                if (v < 0) continue;
                found[k] = s + p + nd->len;
                found_len[k] = (size_t)v;
                left--;
            }
        }
    }
    for (Py_ssize_t k = 0; k < job->n_keys; k++)
        if (found[k] && !hits_add(&job->keys[k], row, (size_t)(found[k] - job->in_data), found_len[k])) return 0;
    return 1;
}

static int is_known(const Job *job, const char *key, size_t len) {
    for (Py_ssize_t i = 0; i < job->n_known; i++)
        if (job->known[i].len == len && memcmp(job->known[i].text, key, len) == 0) return 1;
    return 0;
}

/* Room for one more pair in the pair columns, which grow with the pairs, not the rows. */
static int pair_room(Job *job) {
    if ((size_t)job->pairs + 2 <= job->cap_pairs) return 1;
    size_t cap = job->cap_pairs ? job->cap_pairs * 2 : 4096;
    if (cap > SIZE_MAX / sizeof(int64_t)) return 0;
    Column *cols[2] = {&job->pair_key, &job->pair_value};
    for (int c = 0; c < 2; c++) {
        int64_t *offsets = realloc(cols[c]->offsets, cap * sizeof(int64_t));
        if (!offsets) return 0;
        cols[c]->offsets = offsets;
        uint8_t *valid = realloc(cols[c]->valid, cap);
        if (!valid) return 0;
        cols[c]->valid = valid;
    }
    job->cap_pairs = cap;
    return 1;
}

/* Every `, key: value` pair left to right. The end of a key (the next ':' or ',') is
 * remembered: starts inside the same stretch share it, so a line is read once. */
static int find_pairs(Job *job, const char *s, size_t len) {
    size_t i = 0, scan_from = 1, stop = 0; /* s[scan_from..stop) holds no ':' or ',' */
    while (i + 2 < len) {
        if (!((s[i] == ',' || s[i] == '.') && s[i + 1] == ' ' && is_key_start(s[i + 2]))) {
            i++;
            continue;
        }
        size_t from = i + 3;
        if (!(from >= scan_from && from <= stop)) {
            stop = from;
            while (stop < len && s[stop] != ':' && s[stop] != ',') stop++;
            scan_from = from;
        }
        size_t colon = stop;
        if (colon + 1 >= len || s[colon] != ':' || s[colon + 1] != ' ') {
            i++;
            continue;
        }
        size_t end = colon + 2;
        while (end < len && !is_stop(s[end])) end++;
        if (end == colon + 2) {
            i++;
            continue;
        }
        const char *key = s + i + 2;
        size_t key_len = colon - (i + 2);
        if (!is_known(job, key, key_len)) {
            if (!pair_room(job)) return 0;
            if (!column_set(&job->pair_key, job->pairs, key, key_len)) return 0;
            if (!column_set(&job->pair_value, job->pairs, s + colon + 2, end - colon - 2)) return 0;
            job->pairs++;
        }
        i = end;
    }
    return 1;
}

static void run_job(Job *job) {
    job->ok = 0;
    for (Py_ssize_t row = 0; row < job->n; row++) {
        Py_ssize_t at = row + job->offset;
        int valid = !job->in_valid || (job->in_valid[at >> 3] >> (at & 7)) & 1;
        const char *s = job->in_data + job->in_offsets[at];
        size_t len = valid ? (size_t)(job->in_offsets[at + 1] - job->in_offsets[at]) : 0;
        if (!find_starts(job, s, len)) return;
        if (!valid) job->n_starts = 0;
        if (!find_keys(job, row, s, len)) return;
        if (job->extra) {
            job->list_valid[row] = (uint8_t)valid;
            if (valid && !find_pairs(job, s, len)) return;
            job->list_offsets[row + 1] = (int64_t)job->pairs;
        }
    }
    job->ok = 1;
}

/* ---- Python side: arguments in, Arrow buffers out ---- */

static PyObject *bitmap(const uint8_t *bytes, Py_ssize_t n, Py_ssize_t *nulls) {
    PyObject *out = PyBytes_FromStringAndSize(NULL, (n + 7) / 8);
    if (!out) return NULL;
    uint8_t *bits = (uint8_t *)PyBytes_AS_STRING(out);
    memset(bits, 0, (size_t)(n + 7) / 8);
    *nulls = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (bytes[i])
            bits[i >> 3] |= (uint8_t)(1u << (i & 7));
        else
            (*nulls)++;
    }
    return out;
}

/* (null_count, validity, offsets, data) for a column of `n` rows. */
static PyObject *column_tuple(const Column *c, Py_ssize_t n) {
    Py_ssize_t nulls;
    PyObject *valid = bitmap(c->valid, n, &nulls);
    if (!valid) return NULL;
    PyObject *offsets = PyBytes_FromStringAndSize((const char *)c->offsets, (n + 1) * (Py_ssize_t)sizeof(int64_t));
    PyObject *data = PyBytes_FromStringAndSize(c->data.data ? c->data.data : "", (Py_ssize_t)c->data.len);
    if (!offsets || !data) {
        Py_DECREF(valid);
        Py_XDECREF(offsets);
        Py_XDECREF(data);
        return NULL;
    }
    return Py_BuildValue("(nNNN)", nulls, valid, offsets, data);
}

/* (null_count, validity, offsets, data) for a key found in some of `n` rows; with the GIL. */
static PyObject *hits_tuple(const Hits *h, Py_ssize_t n, const char *in_data) {
    size_t total = 0;
    for (size_t i = 0; i < h->n; i++) total += h->lens[i];
    if (total > (size_t)PY_SSIZE_T_MAX) return PyErr_NoMemory();
    PyObject *valid = PyBytes_FromStringAndSize(NULL, (n + 7) / 8);
    PyObject *offsets = PyBytes_FromStringAndSize(NULL, (n + 1) * (Py_ssize_t)sizeof(int64_t));
    PyObject *data = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (!valid || !offsets || !data) {
        Py_XDECREF(valid);
        Py_XDECREF(offsets);
        Py_XDECREF(data);
        return NULL;
    }
    uint8_t *bits = (uint8_t *)PyBytes_AS_STRING(valid);
    int64_t *ends = (int64_t *)PyBytes_AS_STRING(offsets);
    char *out = PyBytes_AS_STRING(data);
    memset(bits, 0, (size_t)(n + 7) / 8);
    int64_t at = 0;
    Py_ssize_t row = 0;
    ends[0] = 0;
    for (size_t i = 0; i < h->n; i++) {
        for (; row < h->rows[i]; row++) ends[row + 1] = at; /* rows without the key */
        memcpy(out + at, in_data + h->starts[i], h->lens[i]);
        at += (int64_t)h->lens[i];
        bits[row >> 3] |= (uint8_t)(1u << (row & 7));
        ends[row + 1] = at;
        row++;
    }
    for (; row < n; row++) ends[row + 1] = at;
    return Py_BuildValue("(nNNN)", n - (Py_ssize_t)h->n, valid, offsets, data);
}

/* Needles from a tuple of bytes; the caller keeps the tuple alive. */
static Needle *needles_of(PyObject *seq, Py_ssize_t *count) {
    if (!PyTuple_Check(seq)) {
        PyErr_SetString(PyExc_TypeError, "keys must be a tuple of bytes");
        return NULL;
    }
    *count = PyTuple_GET_SIZE(seq);
    Needle *out = calloc((size_t)*count + 1, sizeof(Needle));
    if (!out) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < *count; i++) {
        PyObject *item = PyTuple_GET_ITEM(seq, i);
        if (!PyBytes_Check(item)) {
            free(out);
            PyErr_SetString(PyExc_TypeError, "keys must be a tuple of bytes");
            return NULL;
        }
        out[i].text = PyBytes_AS_STRING(item);
        out[i].len = (size_t)PyBytes_GET_SIZE(item);
        size_t head = out[i].len < 8 ? out[i].len : 8;
        memcpy(&out[i].head, out[i].text, head);
        out[i].mask = head == 8 ? UINT64_MAX : ((uint64_t)1 << (8 * head)) - 1;
    }
    return out;
}

/* Arrow offsets must rise and stay inside the data: checked once, before any read. */
static int offsets_ok(const int64_t *offsets, Py_ssize_t from, Py_ssize_t n, Py_ssize_t data_len) {
    for (Py_ssize_t i = from; i < from + n; i++)
        if (offsets[i] < 0 || offsets[i] > offsets[i + 1] || offsets[i + 1] > data_len) return 0;
    return 1;
}

/* An Arrow string array of n rows from `offset` (validity bitmap optional) whose buffers hold
   what it says: checked before any row is read, since the buffers come from Python. */
static int array_ok(Py_ssize_t n, Py_ssize_t offset, const Py_buffer *offsets, const Py_buffer *data,
                    const Py_buffer *valid) {
    if (n < 0 || offset < 0 || n > PY_SSIZE_T_MAX / 16 - offset ||
        offsets->len / (Py_ssize_t)sizeof(int64_t) < n + offset + 1 ||
        (valid && valid->len < (n + offset + 7) / 8)) {
        PyErr_SetString(PyExc_ValueError, "buffers smaller than the array they describe");
        return 0;
    }
    if (!offsets_ok((const int64_t *)offsets->buf, offset, n, data->len)) {
        PyErr_SetString(PyExc_ValueError, "offsets outside the data buffer");
        return 0;
    }
    return 1;
}

static void job_free(Job *job) {
    if (job->keys)
        for (Py_ssize_t k = 0; k < job->n_keys; k++) hits_free(&job->keys[k]);
    free(job->keys);
    free(job->list_offsets);
    free(job->list_valid);
    column_free(&job->pair_key);
    column_free(&job->pair_value);
    free(job->needles);
    free(job->known);
    free(job->starts);
    free(job->next_key);
    free(job->found);
    free(job->found_len);
}

static const char TOKENIZE_DOC[] =
    "tokenize(n, offset, validity, offsets, data, needles, known, extra)\n"
    "--\n\n"
    "Values of the keys `needles` (key + separator, bytes) in `n` rows of a large_string\n"
    "Arrow array given by its buffers (validity may be None) and offset; with `extra`, the\n"
    "`, key: value` pairs whose key is not in `known`. Returns (columns, pairs): one\n"
    "(null_count, validity, offsets, data) or None (no row has the key) per needle, and\n"
    "None or (list_null_count, list_validity, list_offsets, key column, value column).";

static PyObject *tokenize(PyObject *self, PyObject *args) {
    (void)self;
    Py_ssize_t n, offset;
    PyObject *validity, *needles_obj, *known_obj;
    Py_buffer offsets = {0}, data = {0}, valid = {0};
    int extra;
    if (!PyArg_ParseTuple(args, "nnOy*y*OOp", &n, &offset, &validity, &offsets, &data, &needles_obj, &known_obj, &extra))
        return NULL;
    PyObject *result = NULL;
    Job job;
    memset(&job, 0, sizeof job);
    if (validity != Py_None && PyObject_GetBuffer(validity, &valid, PyBUF_SIMPLE) < 0) goto done;
    if (!array_ok(n, offset, &offsets, &data, validity != Py_None ? &valid : NULL)) goto done;
    job.n = n;
    job.offset = offset;
    job.in_valid = validity != Py_None ? valid.buf : NULL;
    job.in_offsets = offsets.buf;
    job.in_data = data.buf;
    job.in_data_len = data.len;
    job.extra = extra;
    if (!(job.needles = needles_of(needles_obj, &job.n_keys))) goto done;
    if (!(job.known = needles_of(known_obj, &job.n_known))) goto done;
    job.keys = calloc((size_t)job.n_keys + 1, sizeof(Hits));
    if (!job.keys) {
        PyErr_NoMemory();
        goto done;
    }
    job.next_key = calloc((size_t)job.n_keys + 1, sizeof(Py_ssize_t));
    job.found = calloc((size_t)job.n_keys + 1, sizeof(char *));
    job.found_len = calloc((size_t)job.n_keys + 1, sizeof(size_t));
    if (!job.next_key || !job.found || !job.found_len) {
        PyErr_NoMemory();
        goto done;
    }
    /* chains in the kind's order: built from the last key back */
    for (int b = 0; b < 256; b++) job.first_head[b] = -1;
    job.empty_head = -1;
    for (Py_ssize_t k = job.n_keys - 1; k >= 0; k--) {
        Py_ssize_t *head = job.needles[k].len ? &job.first_head[(uint8_t)job.needles[k].text[0]] : &job.empty_head;
        job.next_key[k] = *head;
        *head = k;
    }
    if (extra) {
        job.list_offsets = calloc((size_t)n + 1, sizeof(int64_t));
        job.list_valid = calloc((size_t)n + 1, 1);
        if (!job.list_offsets || !job.list_valid || !pair_room(&job)) {
            PyErr_NoMemory();
            goto done;
        }
        job.pair_key.offsets[0] = job.pair_value.offsets[0] = 0;
    }
    Py_BEGIN_ALLOW_THREADS
    run_job(&job);
    Py_END_ALLOW_THREADS
    if (!job.ok) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject *columns = PyTuple_New(job.n_keys);
    if (!columns) goto done;
    for (Py_ssize_t k = 0; k < job.n_keys; k++) {
        PyObject *item = job.keys[k].n ? hits_tuple(&job.keys[k], n, job.in_data) : (Py_INCREF(Py_None), Py_None);
        if (!item) {
            Py_DECREF(columns);
            goto done;
        }
        PyTuple_SET_ITEM(columns, k, item);
    }
    PyObject *pairs = Py_None;
    Py_INCREF(Py_None);
    if (extra) {
        Py_ssize_t nulls;
        PyObject *lv = bitmap(job.list_valid, n, &nulls);
        PyObject *lo = PyBytes_FromStringAndSize((const char *)job.list_offsets, (n + 1) * (Py_ssize_t)sizeof(int64_t));
        PyObject *kc = column_tuple(&job.pair_key, job.pairs);
        PyObject *vc = column_tuple(&job.pair_value, job.pairs);
        Py_DECREF(Py_None);
        pairs = (lv && lo && kc && vc) ? Py_BuildValue("(nNNNN)", nulls, lv, lo, kc, vc) : NULL;
        if (!pairs) {
            Py_XDECREF(lv);
            Py_XDECREF(lo);
            Py_XDECREF(kc);
            Py_XDECREF(vc);
            Py_DECREF(columns);
            goto done;
        }
    }
    result = Py_BuildValue("(NN)", columns, pairs);
done:
    job_free(&job);
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&data);
    if (validity != Py_None && valid.obj) PyBuffer_Release(&valid);
    return result;
}

/* The kinds' needles, flattened, for one scan of a line that finds every needle at once:
 * needle j belongs to kind kind_of[j]. A needle of two bytes or more is chained from its
 * first two bytes (pair_head, then next[j]), whose bit in `pair` says whether the chain
 * is empty; a one-byte needle from its byte (byte_head). So most places of a line are
 * passed over after one lookup in a small bitmap, and a candidate is compared only with
 * the needles that start as it does. An empty needle is in every line. */
typedef struct {
    Needle *needles;
    Py_ssize_t *kind_of, n_kinds, empty_kind;
    int32_t *next, *pair_head, byte_head[256];
    uint8_t pair[65536 / 8];
} Kinds;

static void kinds_free(Kinds *k) {
    free(k->needles);
    free(k->kind_of);
    free(k->next);
    free(k->pair_head);
}

/* From a tuple (one per kind) of tuples of bytes, the kinds before `start` left out; the
 * caller keeps the tuples alive. */
static int kinds_of(PyObject *seq, Py_ssize_t start, Kinds *out) {
    if (!PyTuple_Check(seq)) {
        PyErr_SetString(PyExc_TypeError, "kinds must be a tuple of tuples of bytes");
        return 0;
    }
    out->n_kinds = PyTuple_GET_SIZE(seq);
    Py_ssize_t total = 0;
    for (Py_ssize_t k = 0; k < out->n_kinds; k++) {
        PyObject *item = PyTuple_GET_ITEM(seq, k);
        if (!PyTuple_Check(item)) {
            PyErr_SetString(PyExc_TypeError, "kinds must be a tuple of tuples of bytes");
            return 0;
        }
        total += PyTuple_GET_SIZE(item);
    }
    if (total >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "too many needles");
        return 0;
    }
    out->needles = calloc((size_t)total + 1, sizeof(Needle));
    out->kind_of = calloc((size_t)total + 1, sizeof(Py_ssize_t));
    out->next = calloc((size_t)total + 1, sizeof(int32_t));
    out->pair_head = malloc(65536 * sizeof(int32_t));
    if (!out->needles || !out->kind_of || !out->next || !out->pair_head) {
        PyErr_NoMemory();
        return 0;
    }
    for (int b = 0; b < 256; b++) out->byte_head[b] = -1;
    for (int b = 0; b < 65536; b++) out->pair_head[b] = -1;
    out->empty_kind = -1;
    Py_ssize_t out_n = 0;
    for (Py_ssize_t k = start; k < out->n_kinds; k++) {
        Py_ssize_t count;
        Needle *own = needles_of(PyTuple_GET_ITEM(seq, k), &count);
        if (!own) return 0;
        for (Py_ssize_t i = 0; i < count; i++) {
            Needle *nd = &own[i];
            if (nd->len == 0) {
                if (out->empty_kind < 0) out->empty_kind = k;
                continue;
            }
            int32_t j = (int32_t)out_n++;
            out->needles[j] = *nd;
            out->kind_of[j] = k;
            uint8_t b0 = (uint8_t)nd->text[0];
            if (nd->len == 1) {
                out->next[j] = out->byte_head[b0];
                out->byte_head[b0] = j;
            } else {
                unsigned pair = (unsigned)b0 << 8 | (uint8_t)nd->text[1];
                out->next[j] = out->pair_head[pair];
                out->pair_head[pair] = j;
                out->pair[pair >> 3] |= (uint8_t)(1u << (pair & 7));
            }
        }
        free(own);
    }
    return 1;
}

/* Whether needle `nd` starts at s[p] (p < len): its first 8 bytes in one compare. */
static int starts_at(const Needle *nd, const char *s, size_t len, size_t p) {
    if (nd->len > len - p || (word_at(s, len, p) & nd->mask) != nd->head) return 0;
    return nd->len <= 8 || memcmp(s + p + 8, nd->text + 8, nd->len - 8) == 0;
}

/* The first kind (lowest index) one of whose needles occurs in s[0, len), or -1; the
 * scan stops once no lower kind can be found. Every read stays inside s. */
static Py_ssize_t first_kind(const Kinds *k, const char *s, size_t len, Py_ssize_t start) {
    Py_ssize_t best = k->empty_kind >= 0 ? k->empty_kind : PY_SSIZE_T_MAX;
    for (size_t p = 0; p < len && best > start; p++) {
        uint8_t b0 = (uint8_t)s[p];
        for (int32_t j = k->byte_head[b0]; j >= 0; j = k->next[j])
            if (k->kind_of[j] < best) best = k->kind_of[j];
        if (p + 1 >= len) break;
        unsigned pair = (unsigned)b0 << 8 | (uint8_t)s[p + 1];
        if (!(k->pair[pair >> 3] >> (pair & 7) & 1)) continue;
        for (int32_t j = k->pair_head[pair]; j >= 0; j = k->next[j])
            if (k->kind_of[j] < best && starts_at(&k->needles[j], s, len, p)) best = k->kind_of[j];
    }
    return best == PY_SSIZE_T_MAX ? -1 : best;
}

static const char CLASSIFY_DOC[] =
    "classify(n, offset, validity, offsets, data, kinds, start, rows)\n"
    "--\n\n"
    "For each of `n` rows of a large_string Arrow array given by its buffers (validity may\n"
    "be None) and offset, or for the rows listed in `rows` (int64 bytes; None: every row):\n"
    "the index of the first kind, from `start` on, one of whose needles (`kinds`: a tuple\n"
    "of tuples of bytes, in the format's order) the row contains; -1 for a null row or one\n"
    "with none. Returns the indices as int32 bytes.";

static PyObject *classify(PyObject *self, PyObject *args) {
    (void)self;
    Py_ssize_t n, offset, start;
    PyObject *validity, *kinds_obj, *rows_obj;
    Py_buffer offsets = {0}, data = {0}, valid = {0}, rows = {0};
    if (!PyArg_ParseTuple(args, "nnOy*y*OnO", &n, &offset, &validity, &offsets, &data, &kinds_obj, &start, &rows_obj))
        return NULL;
    PyObject *result = NULL;
    Kinds kinds = {0};
    if (validity != Py_None && PyObject_GetBuffer(validity, &valid, PyBUF_SIMPLE) < 0) goto done;
    if (rows_obj != Py_None && PyObject_GetBuffer(rows_obj, &rows, PyBUF_SIMPLE) < 0) goto done;
    if (start < 0) {
        PyErr_SetString(PyExc_ValueError, "buffers smaller than the array they describe");
        goto done;
    }
    if (!array_ok(n, offset, &offsets, &data, validity != Py_None ? &valid : NULL)) goto done;
    if (!kinds_of(kinds_obj, start, &kinds)) goto done;
    if (kinds.n_kinds > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "too many kinds");
        goto done;
    }
    Py_ssize_t n_out = n;
    const int64_t *listed = NULL;
    if (rows_obj != Py_None) {
        n_out = rows.len / (Py_ssize_t)sizeof(int64_t);
        listed = rows.buf;
        for (Py_ssize_t i = 0; i < n_out; i++)
            if (listed[i] < 0 || listed[i] >= n) {
                PyErr_SetString(PyExc_ValueError, "a listed row outside the array");
                goto done;
            }
    }
    result = PyBytes_FromStringAndSize(NULL, n_out * (Py_ssize_t)sizeof(int32_t));
    if (!result) goto done;
    int32_t *out = (int32_t *)PyBytes_AS_STRING(result);
    const int64_t *ends = (const int64_t *)offsets.buf;
    const uint8_t *bits = validity != Py_None ? valid.buf : NULL;
    const char *text = data.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n_out; i++) {
        Py_ssize_t at = (listed ? (Py_ssize_t)listed[i] : i) + offset;
        out[i] = -1;
        if (bits && !(bits[at >> 3] >> (at & 7) & 1)) continue;
        out[i] = (int32_t)first_kind(&kinds, text + ends[at], (size_t)(ends[at + 1] - ends[at]), start);
    }
    Py_END_ALLOW_THREADS
done:
    kinds_free(&kinds);
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&data);
    if (validity != Py_None && valid.obj) PyBuffer_Release(&valid);
    if (rows_obj != Py_None && rows.obj) PyBuffer_Release(&rows);
    return result;
}

static PyMethodDef METHODS[] = {
    {"tokenize", tokenize, METH_VARARGS, TOKENIZE_DOC},
    {"classify", classify, METH_VARARGS, CLASSIFY_DOC},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {
    PyModuleDef_HEAD_INIT, "loganalyze.formats._tokenizer", "The compiled tokenizer of `key: value` lines (loganalyze/formats/_tokenizer.c).",
    -1, METHODS, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__tokenizer(void) { return PyModule_Create(&MODULE); }
