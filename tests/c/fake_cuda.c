/* fake_cuda.c: a fake CUDA driver (libcuda.so.1) that runs Mica's kernels on
 * the CPU, so GPU programs run end to end where there is no GPU
 * (tests/fake_driver.py builds it; docs/gpu.md, "Running GPU programs without
 * a GPU").
 *
 * It exports the driver entry points runtime_c/mica_gpu.c looks up (and
 * cuGetErrorName), with the real API's signatures and error codes, and
 * behaves like one device:
 *
 *   - device memory is host memory; every allocation is kept in a table, so
 *     a pointer handed to a kernel is known with the bytes from it to its
 *     allocation's end. New memory is filled with 0xff bytes (nan, -1), as a
 *     real allocation holds whatever was there; a pointer, copy or memset
 *     outside every allocation is an error.
 *   - cuModuleLoadData reads the PTX text: every `.visible .entry NAME(...)`
 *     and its `.param .TYPE name` list (u64 pointer, s64, u32, f32, f64),
 *     and, where the compiler wrote one, the `// mica-kernel NAME threads=...;
 *     grid_y=...` marker giving the number of threads a launch must cover.
 *   - cuLaunchKernel decodes kernelParams by those types into harg values and
 *     runs the kernel's C adapter (tests/c/ptx_harness.inc, through
 *     ptx_adapters.h) once: an adapter computes the whole launch through the
 *     C runtime, whose bits tests/test_ptx.py checks against the PTX (gemm's
 *     adapter also gets the batch, the grid's height; adam_step's the step t
 *     whose biases the kernel was given). The launch shape is checked (1-D
 *     blocks of at most 1024 threads, a grid that covers the marker's thread
 *     count, a grid height of 1 unless the kernel takes one); a pointer that
 *     is no allocation makes the launch fault as a GPU would:
 *     cuCtxSynchronize answers CUDA_ERROR_ILLEGAL_ADDRESS, and so does every
 *     call after it (the error is sticky).
 *
 * A kernel the module lacks, or one with no adapter, is an error whose
 * cuGetErrorString text names it: the last error's text carries what failed
 * (the real driver's text for the code, then the detail in parentheses).
 *
 * Environment, for tests of the device glue's failures:
 *   FAKE_CUDA_INIT=CODE     cuInit answers CODE (100: no device)
 *   FAKE_CUDA_DEVICES=N     cuDeviceGetCount answers N (default 1)
 *   FAKE_CUDA_MEMORY=BYTES  device memory; more is CUDA_ERROR_OUT_OF_MEMORY
 *   FAKE_CUDA_LOG=PATH      appends "NAME gridX gridY blockX" per launch
 *
 * Built as a shared library with the whole runtime except mica_gpu.c (the
 * program's side of this API), with hidden visibility so only the cu*
 * functions are exported and the runtime inside does not meet the
 * program's.
 */
#include "mica.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/* The runtime inside wants a program; it never runs. */
const char *const mica_source_names[] = {"fake libcuda"};
const int mica_source_count = 1;
void mica_program(void) {}

#include "ptx_adapters.h"

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct context *CUcontext;
typedef struct module *CUmodule;
typedef struct entry *CUfunction;
typedef struct CUstream_st *CUstream;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_INVALID_PTX = 218,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_NOT_SUPPORTED = 801,
};

static const struct {
    CUresult code;
    const char *name, *text;
} ERRORS[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
};

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---------------------------------------------------------------- state */

struct context {
    int device;
};

#define MAX_PARAMS 32

struct entry {
    char *name;
    int params;
    char type[MAX_PARAMS][4];    /* u64 s64 u32 f32 f64 */
    char *param_name[MAX_PARAMS];
    char *threads, *grid_y;      /* from the mica-kernel marker, or NULL */
    const hentry *adapter;       /* NULL: none (an error at cuModuleGetFunction) */
    struct entry *next;
};

struct module {
    struct entry *entries;
    struct module *next;
};

struct allocation {
    uintptr_t base;
    size_t bytes;
};

static struct {
    bool initialized;
    struct context primary;
    struct context *current;
    struct module *modules;
    struct allocation *table; /* sorted by base */
    size_t count, capacity;
    size_t in_use, limit;
    CUresult sticky; /* a fault: every call answers it from now on */
    CUresult pending; /* a fault the next synchronize reports */
    CUresult detail_code;
    char detail[600];
    int64_t adam_t; /* the last step t found for adam_step */
} fake;

/* Fails with code, remembering why for cuGetErrorString. */
static CUresult fail(CUresult code, const char *format, ...) __attribute__((format(printf, 2, 3)));
static CUresult fail(CUresult code, const char *format, ...) {
    const char *text = "unknown error";
    for (size_t k = 0; k < COUNT_OF(ERRORS); k++)
        if (ERRORS[k].code == code) text = ERRORS[k].text;
    int n = snprintf(fake.detail, sizeof fake.detail, "%s (fake CUDA driver: ", text);
    va_list args;
    va_start(args, format);
    if (n > 0 && (size_t)n < sizeof fake.detail) n += vsnprintf(fake.detail + n, sizeof fake.detail - (size_t)n, format, args);
    va_end(args);
    if (n > 0 && (size_t)n < sizeof fake.detail - 1) strcat(fake.detail, ")");
    fake.detail_code = code;
    return code;
}

/* Every call but cuGetErrorString starts here: the sticky fault, then cuInit. */
static CUresult ready(bool need_context) {
    if (fake.sticky) return fake.sticky;
    if (!fake.initialized) return fail(CUDA_ERROR_NOT_INITIALIZED, "cuInit has not been called");
    if (need_context && fake.current == NULL) return fail(CUDA_ERROR_INVALID_CONTEXT, "no current context");
    return CUDA_SUCCESS;
}

static long long env_number(const char *name, long long otherwise) {
    const char *text = getenv(name);
    return text && *text ? strtoll(text, NULL, 0) : otherwise;
}

/* ---------------------------------------------------------------- errors */

EXPORT CUresult cuGetErrorString(CUresult error, const char **text) {
    if (text == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (error != CUDA_SUCCESS && error == fake.detail_code) {
        *text = fake.detail;
        return CUDA_SUCCESS;
    }
    for (size_t k = 0; k < COUNT_OF(ERRORS); k++)
        if (ERRORS[k].code == error) {
            *text = ERRORS[k].text;
            return CUDA_SUCCESS;
        }
    *text = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorName(CUresult error, const char **name) {
    if (name == NULL) return CUDA_ERROR_INVALID_VALUE;
    for (size_t k = 0; k < COUNT_OF(ERRORS); k++)
        if (ERRORS[k].code == error) {
            *name = ERRORS[k].name;
            return CUDA_SUCCESS;
        }
    *name = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

/* ---------------------------------------------------------------- device and context */

EXPORT CUresult cuInit(unsigned flags) {
    if (flags != 0) return fail(CUDA_ERROR_INVALID_VALUE, "cuInit flags must be 0, not %u", flags);
    long long forced = env_number("FAKE_CUDA_INIT", 0);
    if (forced != 0) return fail((CUresult)forced, "FAKE_CUDA_INIT=%lld", forced);
    fake.initialized = true;
    fake.limit = (size_t)env_number("FAKE_CUDA_MEMORY", (long long)1 << 40);
    return CUDA_SUCCESS;
}

static int device_count(void) {
    return (int)env_number("FAKE_CUDA_DEVICES", 1);
}

EXPORT CUresult cuDeviceGetCount(int *count) {
    CUresult status = ready(false);
    if (status) return status;
    if (count == NULL) return fail(CUDA_ERROR_INVALID_VALUE, "cuDeviceGetCount(NULL)");
    *count = device_count();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    CUresult status = ready(false);
    if (status) return status;
    if (device == NULL) return fail(CUDA_ERROR_INVALID_VALUE, "cuDeviceGet(NULL, %d)", ordinal);
    if (ordinal < 0 || ordinal >= device_count())
        return fail(CUDA_ERROR_INVALID_DEVICE, "device %d of %d", ordinal, device_count());
    *device = ordinal;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device) {
    CUresult status = ready(false);
    if (status) return status;
    if (context == NULL) return fail(CUDA_ERROR_INVALID_VALUE, "cuDevicePrimaryCtxRetain(NULL, %d)", device);
    if (device < 0 || device >= device_count()) return fail(CUDA_ERROR_INVALID_DEVICE, "device %d", device);
    fake.primary.device = device;
    *context = &fake.primary;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext context) {
    CUresult status = ready(false);
    if (status) return status;
    if (context != NULL && context != &fake.primary) return fail(CUDA_ERROR_INVALID_CONTEXT, "unknown context %p", (void *)context);
    fake.current = context;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize(void) {
    CUresult status = ready(true);
    if (status) return status;
    if (fake.pending) {
        fake.sticky = fake.pending; /* its detail stays the last error's text */
        fake.pending = CUDA_SUCCESS;
        return fake.sticky;
    }
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- memory */

/* The index of the first allocation whose base is above address. */
static size_t upper(uintptr_t address) {
    size_t lo = 0, hi = fake.count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (fake.table[mid].base <= address) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* The allocation holding address, or NULL. */
static struct allocation *holding(uintptr_t address) {
    size_t k = upper(address);
    if (k == 0) return NULL;
    struct allocation *a = &fake.table[k - 1];
    return address < a->base + a->bytes ? a : NULL;
}

/* Is [address, address + bytes) inside one allocation? */
static bool inside(CUdeviceptr address, size_t bytes) {
    struct allocation *a = holding((uintptr_t)address);
    return a != NULL && bytes <= a->base + a->bytes - (uintptr_t)address;
}

/* Where address lies, for an error's text. */
static const char *where(CUdeviceptr address, char *out, size_t size) {
    struct allocation *a = holding((uintptr_t)address);
    if (a == NULL)
        snprintf(out, size, "0x%llx, in no allocation", address);
    else
        snprintf(out, size, "0x%llx, %zu bytes into an allocation of %zu", address, (size_t)((uintptr_t)address - a->base),
                 a->bytes);
    return out;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *pointer, size_t bytes) {
    CUresult status = ready(true);
    if (status) return status;
    if (pointer == NULL || bytes == 0) return fail(CUDA_ERROR_INVALID_VALUE, "cuMemAlloc of %zu bytes", bytes);
    if (bytes > fake.limit - fake.in_use)
        return fail(CUDA_ERROR_OUT_OF_MEMORY, "%zu bytes asked, %zu of %zu in use", bytes, fake.in_use, fake.limit);
    void *p = aligned_alloc(256, (bytes + 255) / 256 * 256); /* the driver's alignment */
    if (p == NULL) return fail(CUDA_ERROR_OUT_OF_MEMORY, "the host has no %zu bytes", bytes);
    memset(p, 0xff, bytes);
    if (fake.count == fake.capacity) {
        size_t capacity = fake.capacity ? 2 * fake.capacity : 64;
        struct allocation *table = realloc(fake.table, capacity * sizeof *table);
        if (table == NULL) {
            free(p);
            return fail(CUDA_ERROR_OUT_OF_MEMORY, "the allocation table");
        }
        fake.table = table;
        fake.capacity = capacity;
    }
    size_t k = upper((uintptr_t)p);
    memmove(&fake.table[k + 1], &fake.table[k], (fake.count - k) * sizeof *fake.table);
    fake.table[k] = (struct allocation){(uintptr_t)p, bytes};
    fake.count++;
    fake.in_use += bytes;
    *pointer = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr pointer) {
    CUresult status = ready(true);
    if (status) return status;
    if (pointer == 0) return CUDA_SUCCESS;
    struct allocation *a = holding((uintptr_t)pointer);
    if (a == NULL || a->base != (uintptr_t)pointer)
        return fail(CUDA_ERROR_INVALID_VALUE, "cuMemFree(0x%llx): no allocation starts there", pointer);
    fake.in_use -= a->bytes;
    free((void *)a->base);
    size_t k = (size_t)(a - fake.table);
    memmove(&fake.table[k], &fake.table[k + 1], (fake.count - k - 1) * sizeof *fake.table);
    fake.count--;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr device, const void *host, size_t bytes) {
    CUresult status = ready(true);
    if (status) return status;
    if (host == NULL && bytes) return fail(CUDA_ERROR_INVALID_VALUE, "cuMemcpyHtoD from NULL");
    if (!inside(device, bytes))
        return fail(CUDA_ERROR_INVALID_VALUE, "cuMemcpyHtoD of %zu bytes to %s", bytes, where(device, (char[96]){0}, 96));
    if (bytes) memcpy((void *)(uintptr_t)device, host, bytes);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoH_v2(void *host, CUdeviceptr device, size_t bytes) {
    CUresult status = ready(true);
    if (status) return status;
    if (host == NULL && bytes) return fail(CUDA_ERROR_INVALID_VALUE, "cuMemcpyDtoH to NULL");
    if (!inside(device, bytes))
        return fail(CUDA_ERROR_INVALID_VALUE, "cuMemcpyDtoH of %zu bytes from %s", bytes, where(device, (char[96]){0}, 96));
    if (bytes) memcpy(host, (const void *)(uintptr_t)device, bytes);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr to, CUdeviceptr from, size_t bytes) {
    CUresult status = ready(true);
    if (status) return status;
    if (!inside(to, bytes) || !inside(from, bytes))
        return fail(CUDA_ERROR_INVALID_VALUE, "cuMemcpyDtoD of %zu bytes from %s to %s", bytes,
                    where(from, (char[96]){0}, 96), where(to, (char[96]){0}, 96));
    if (bytes) memmove((void *)(uintptr_t)to, (const void *)(uintptr_t)from, bytes);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr device, unsigned char value, size_t bytes) {
    CUresult status = ready(true);
    if (status) return status;
    if (!inside(device, bytes))
        return fail(CUDA_ERROR_INVALID_VALUE, "cuMemsetD8 of %zu bytes at %s", bytes, where(device, (char[96]){0}, 96));
    if (bytes) memset((void *)(uintptr_t)device, value, bytes);
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- modules */

static char *copy(const char *from, size_t n) {
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, from, n);
        s[n] = 0;
    }
    return s;
}

static const char *skip_space(const char *s) {
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
    return s;
}

static size_t word_length(const char *s) {
    size_t n = 0;
    while (s[n] == '_' || s[n] == '$' || (s[n] >= '0' && s[n] <= '9') || ((s[n] | 32) >= 'a' && (s[n] | 32) <= 'z')) n++;
    return n;
}

static void free_module(struct module *m) {
    while (m->entries) {
        struct entry *e = m->entries;
        m->entries = e->next;
        for (int k = 0; k < e->params; k++) free(e->param_name[k]);
        free(e->name);
        free(e->threads);
        free(e->grid_y);
        free(e);
    }
    free(m);
}

/* `// mica-kernel NAME threads=EXPR; grid_y=EXPR`: the launch shape, given to
 * the entry of that name. */
static void read_marker(struct module *m, const char *line) {
    const char *name = skip_space(line + strlen("// mica-kernel"));
    size_t n = word_length(name);
    char *attrs = copy(name + n, strcspn(name + n, "\n"));
    for (struct entry *e = m->entries; e && attrs; e = e->next) {
        if (strlen(e->name) != n || strncmp(e->name, name, n) != 0) continue;
        char *rest = attrs;
        for (char *part; (part = strsep(&rest, ";")) != NULL;) {
            char *eq = strchr(part, '=');
            if (eq == NULL) continue;
            *eq = 0;
            const char *key = skip_space(part);
            char *value = copy(eq + 1, strlen(eq + 1));
            if (strncmp(key, "threads", 7) == 0) free(e->threads), e->threads = value;
            else if (strncmp(key, "grid_y", 6) == 0) free(e->grid_y), e->grid_y = value;
            else free(value);
        }
        break;
    }
    free(attrs);
}

/* Is s (a `.entry`) outside a comment and right after `.visible`? */
static bool visible_entry(const char *text, const char *s) {
    const char *line = s;
    while (line > text && line[-1] != '\n') line--;
    for (const char *p = line; p + 1 < s; p++)
        if (p[0] == '/' && p[1] == '/') return false;
    const char *p = s;
    while (p > text && (p[-1] == ' ' || p[-1] == '\t' || p[-1] == '\n' || p[-1] == '\r')) p--;
    return p - text >= 8 && strncmp(p - 8, ".visible", 8) == 0;
}

EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image) {
    CUresult status = ready(true);
    if (status) return status;
    if (module == NULL || image == NULL) return fail(CUDA_ERROR_INVALID_VALUE, "cuModuleLoadData(NULL)");
    const char *text = image;
    if (strstr(text, ".version") == NULL || strstr(text, ".target") == NULL)
        return fail(CUDA_ERROR_INVALID_IMAGE, "the image is no PTX text (no .version and .target)");
    struct module *m = calloc(1, sizeof *m);
    if (m == NULL) return fail(CUDA_ERROR_OUT_OF_MEMORY, "the module");
    struct entry **last = &m->entries;
    for (const char *s = strstr(text, ".entry"); s; s = strstr(s, ".entry")) {
        bool visible = visible_entry(text, s);
        const char *name = skip_space(s + 6);
        size_t n = word_length(name);
        s = name + n;
        if (!visible) continue;
        struct entry *e = calloc(1, sizeof *e);
        e->name = copy(name, n);
        *last = e;
        last = &e->next;
        const char *p = skip_space(s);
        if (*p != '(') {
            free_module(m);
            return fail(CUDA_ERROR_INVALID_PTX, "entry %.*s has no parameter list", (int)n, name);
        }
        p = skip_space(p + 1);
        while (*p != ')') {
            if (strncmp(p, ".param", 6) != 0 || e->params == MAX_PARAMS) {
                free_module(m);
                return fail(CUDA_ERROR_INVALID_PTX, "entry %.*s: cannot read parameter %d (%.20s)", (int)n, name,
                            e->params, p);
            }
            p = skip_space(p + 6);
            size_t t = *p == '.' ? word_length(p + 1) : 0;
            static const char *const TYPES[] = {"u64", "s64", "u32", "f32", "f64"};
            bool known = false;
            for (size_t k = 0; k < COUNT_OF(TYPES); k++) known |= t == 3 && strncmp(p + 1, TYPES[k], 3) == 0;
            if (!known) {
                free_module(m);
                return fail(CUDA_ERROR_INVALID_PTX, "entry %.*s: parameter type %.*s is none of u64 s64 u32 f32 f64",
                            (int)n, name, (int)t + 1, p);
            }
            memcpy(e->type[e->params], p + 1, 3);
            p = skip_space(p + 1 + t);
            size_t pn = word_length(p);
            e->param_name[e->params++] = copy(p, pn);
            p = skip_space(p + pn);
            if (*p == ',') p = skip_space(p + 1);
            else if (*p != ')') {
                free_module(m);
                return fail(CUDA_ERROR_INVALID_PTX, "entry %.*s: expected ',' or ')' after a parameter", (int)n, name);
            }
        }
        e->adapter = ptx_adapter(e->name);
        s = p;
    }
    for (const char *s = strstr(text, "// mica-kernel "); s; s = strstr(s + 1, "// mica-kernel ")) read_marker(m, s);
    m->next = fake.modules;
    fake.modules = m;
    *module = m;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *function, CUmodule module, const char *name) {
    CUresult status = ready(true);
    if (status) return status;
    if (function == NULL || name == NULL) return fail(CUDA_ERROR_INVALID_VALUE, "cuModuleGetFunction(NULL)");
    struct module *m = fake.modules;
    while (m && m != module) m = m->next;
    if (m == NULL) return fail(CUDA_ERROR_INVALID_HANDLE, "no module %p", (void *)module);
    for (struct entry *e = m->entries; e; e = e->next) {
        if (strcmp(e->name, name) != 0) continue;
        if (e->adapter == NULL)
            return fail(CUDA_ERROR_NOT_SUPPORTED, "no C adapter for kernel %s in tests/c/ptx_harness.inc", name);
        *function = e;
        return CUDA_SUCCESS;
    }
    return fail(CUDA_ERROR_NOT_FOUND, "the module has no .entry %s", name);
}

/* ---------------------------------------------------------------- launching */

/* The marker's thread count: + - * // and parentheses over integers and the
 * kernel's integer parameters. False when it names something else. */
typedef struct {
    const char *s;
    const struct entry *e;
    const harg *A;
    bool ok;
} reader;

static int64_t sum(reader *r);

static int64_t factor(reader *r) {
    r->s = skip_space(r->s);
    if (*r->s == '(') {
        r->s++;
        int64_t v = sum(r);
        r->s = skip_space(r->s);
        if (*r->s == ')') r->s++;
        else r->ok = false;
        return v;
    }
    if (*r->s == '-') {
        r->s++;
        return -factor(r);
    }
    if (*r->s >= '0' && *r->s <= '9') {
        char *end;
        int64_t v = strtoll(r->s, &end, 10);
        r->s = end;
        return v;
    }
    size_t n = word_length(r->s);
    for (int k = 0; n && k < r->e->params; k++)
        if (strlen(r->e->param_name[k]) == n && strncmp(r->e->param_name[k], r->s, n) == 0 &&
            (r->e->type[k][0] == 's' || strcmp(r->e->type[k], "u32") == 0)) {
            r->s += n;
            return r->A[k].i;
        }
    r->ok = false;
    r->s += n ? n : 1;
    return 0;
}

static int64_t product(reader *r) {
    int64_t v = factor(r);
    for (;;) {
        r->s = skip_space(r->s);
        if (*r->s == '*') {
            r->s++;
            v *= factor(r);
        } else if (r->s[0] == '/' && r->s[1] == '/') {
            r->s += 2;
            int64_t d = factor(r);
            if (d == 0) {
                r->ok = false;
                return 0;
            }
            int64_t q = v / d;
            v = (q * d != v && (v < 0) != (d < 0)) ? q - 1 : q; /* Python's floor division */
        } else {
            return v;
        }
    }
}

static int64_t sum(reader *r) {
    int64_t v = product(r);
    for (;;) {
        r->s = skip_space(r->s);
        if (*r->s == '+') {
            r->s++;
            v += product(r);
        } else if (*r->s == '-') {
            r->s++;
            v -= product(r);
        } else {
            return v;
        }
    }
}

static bool evaluate(const char *text, const struct entry *e, const harg *A, int64_t *value) {
    reader r = {text, e, A, true};
    *value = sum(&r);
    return r.ok && *skip_space(r.s) == 0;
}

/* The step t for which the C runtime's biases are bias1 and bias2 (1 - beta^t
 * by mica_powi): adam_step's adapter takes t, the kernel the biases. Any such
 * t gives the same step. The last t found is tried first, then t + 1 (a
 * training loop's next step), then 1, 2, ... until both biases reach 1,
 * after which no larger t differs. */
static bool adam_step_t(const struct entry *e, harg *A) {
    bool f32 = strstr(e->name, "_f32") != NULL;
    for (int64_t k = 0; k < ((int64_t)1 << 26); k++) {
        int64_t t = k == 0 ? fake.adam_t : k == 1 ? fake.adam_t + 1 : k - 1;
        if (t < 1) continue;
        double bias1, bias2;
        if (f32) {
            bias1 = (float)(1 - mica_powi_f32((float)A[6].f, t));
            bias2 = (float)(1 - mica_powi_f32((float)A[7].f, t));
        } else {
            bias1 = 1 - mica_powi_f64(A[6].f, t);
            bias2 = 1 - mica_powi_f64(A[7].f, t);
        }
        if (bias1 == A[9].f && bias2 == A[10].f) {
            A[11].i = fake.adam_t = t;
            return true;
        }
        if (k >= 2 && bias1 == 1 && bias2 == 1) return false;
    }
    return false;
}

static void log_launch(const struct entry *e, unsigned gx, unsigned gy, unsigned bx) {
    const char *path = getenv("FAKE_CUDA_LOG");
    if (path == NULL || *path == 0) return;
    FILE *f = fopen(path, "a");
    if (f == NULL) return;
    fprintf(f, "%s %u %u %u\n", e->name, gx, gy, bx);
    fclose(f);
}

EXPORT CUresult cuLaunchKernel(CUfunction function, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
                               unsigned block_y, unsigned block_z, unsigned shared_bytes, CUstream stream,
                               void **params, void **extra) {
    CUresult status = ready(true);
    if (status) return status;
    struct entry *e = NULL;
    for (struct module *m = fake.modules; m && e == NULL; m = m->next)
        for (struct entry *k = m->entries; k && e == NULL; k = k->next)
            if (k == function) e = k;
    if (e == NULL) return fail(CUDA_ERROR_INVALID_HANDLE, "no kernel %p", (void *)function);
    if (extra != NULL) return fail(CUDA_ERROR_NOT_SUPPORTED, "%s: arguments through `extra`", e->name);
    if (params == NULL && e->params > 0) return fail(CUDA_ERROR_INVALID_VALUE, "%s: no kernelParams", e->name);
    if (grid_x == 0 || grid_y == 0 || grid_z == 0 || block_x == 0 || block_y == 0 || block_z == 0 ||
        (uint64_t)block_x * block_y * block_z > 1024 || grid_y > 65535 || grid_z > 65535 || grid_x > 0x7fffffffu)
        return fail(CUDA_ERROR_INVALID_VALUE, "%s: grid %ux%ux%u of blocks %ux%ux%u", e->name, grid_x, grid_y, grid_z,
                    block_x, block_y, block_z);
    if (block_y != 1 || block_z != 1 || grid_z != 1)
        return fail(CUDA_ERROR_INVALID_VALUE, "%s: Mica kernels take 1-D blocks and a grid of height at most y, not "
                    "grid %ux%ux%u of blocks %ux%ux%u", e->name, grid_x, grid_y, grid_z, block_x, block_y, block_z);
    (void)shared_bytes;
    (void)stream;

    harg A[MAX_PARAMS + 2];
    memset(A, 0, sizeof A);
    for (int k = 0; k < e->params; k++) {
        const char *t = e->type[k];
        if (strcmp(t, "u64") == 0) {
            uint64_t v;
            memcpy(&v, params[k], sizeof v);
            A[k].kind = v ? 'p' : 'n';
            if (v == 0) continue;
            struct allocation *a = holding((uintptr_t)v);
            if (a == NULL) { /* the kernel would fault: reported at synchronize, and sticky */
                fail(CUDA_ERROR_ILLEGAL_ADDRESS, "kernel %s, parameter %s = 0x%llx: no device allocation holds it",
                     e->name, e->param_name[k], (unsigned long long)v);
                fake.pending = CUDA_ERROR_ILLEGAL_ADDRESS;
                return CUDA_SUCCESS;
            }
            A[k].p = (void *)(uintptr_t)v;
            A[k].bytes = a->base + a->bytes - (uintptr_t)v;
        } else if (strcmp(t, "s64") == 0) {
            memcpy(&A[k].i, params[k], sizeof A[k].i);
            A[k].kind = 'i';
        } else if (strcmp(t, "u32") == 0) {
            uint32_t v;
            memcpy(&v, params[k], sizeof v);
            A[k].i = v;
            A[k].kind = 'i';
        } else if (strcmp(t, "f32") == 0) {
            float v;
            memcpy(&v, params[k], sizeof v);
            A[k].f = v;
            A[k].kind = 'f';
        } else {
            memcpy(&A[k].f, params[k], sizeof A[k].f);
            A[k].kind = 'f';
        }
    }

    /* The launch must cover the kernel's threads (its marker's count): one
     * that covers fewer would leave outputs unwritten on a GPU, which the
     * adapter, computing the whole result, would hide. */
    int64_t threads, height;
    if (e->threads && evaluate(e->threads, e, A, &threads) && (uint64_t)grid_x * block_x < (uint64_t)(threads > 0 ? threads : 0))
        return fail(CUDA_ERROR_INVALID_VALUE, "%s: the launch covers %llu threads, the kernel needs %s = %lld", e->name,
                    (unsigned long long)grid_x * block_x, e->threads, (long long)threads);
    if (e->grid_y == NULL && grid_y != 1)
        return fail(CUDA_ERROR_INVALID_VALUE, "%s takes no grid height, launched with %u", e->name, grid_y);
    if (e->grid_y && evaluate(e->grid_y, e, A, &height) && height != grid_y)
        return fail(CUDA_ERROR_INVALID_VALUE, "%s: grid height %u, the kernel needs %s = %lld", e->name, grid_y,
                    e->grid_y, (long long)height);

    /* The adapters' own arguments past the kernel's (ptx_adapters.h). */
    if (strstr(e->name, "mica_gemm_") == e->name) A[15].i = grid_y;
    if (strstr(e->name, "mica_adam_step_") == e->name && !adam_step_t(e, A))
        return fail(CUDA_ERROR_INVALID_VALUE, "%s: no step t gives bias1 and bias2", e->name);

    log_launch(e, grid_x, grid_y, block_x);
    mica_tape_begin(0); /* the backward adapters' nodes live in this runtime's arena, reused per launch */
    e->adapter->run(A);
    mica_tape_end();
    return CUDA_SUCCESS;
}
