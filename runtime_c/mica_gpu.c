/* mica_gpu.c: the device glue over the CUDA driver API (docs/gpu.md).
 *
 * Only GPU programs reference this file; they are built as the glibc flavour,
 * which can dlopen the driver. The first device operation loads libcuda.so.1,
 * takes the first device's primary context and loads the program's PTX
 * module (mica_ptx, embedded by the compiler); every failure stops the
 * program with its Mica line and the driver's reason. Device memory comes
 * from a cache of freed blocks, so a training loop's temporaries do not call
 * the driver's allocator every step.
 */
#include "mica.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef uint64_t CUdeviceptr;

/* The driver entry points the runtime uses, found with dlsym. */
static struct {
    CUresult (*init)(unsigned);
    CUresult (*device_count)(int *);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*primary_retain)(CUcontext *, CUdevice);
    CUresult (*context_set)(CUcontext);
    CUresult (*module_load)(CUmodule *, const void *);
    CUresult (*function_get)(CUfunction *, CUmodule, const char *);
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUresult (*release)(CUdeviceptr);
    CUresult (*to_device)(CUdeviceptr, const void *, size_t);
    CUresult (*to_host)(void *, CUdeviceptr, size_t);
    CUresult (*device_copy)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*zero)(CUdeviceptr, unsigned char, size_t);
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                       void **, void **);
    CUresult (*synchronize)(void);
    CUresult (*error_string)(CUresult, const char **);
} cu;

static CUmodule module;
static bool ready;

static const char *reason(CUresult status) {
    const char *text = NULL;
    if (cu.error_string) cu.error_string(status, &text);
    return text ? text : "unknown driver error";
}

static void check(CUresult status, const char *what, int line) {
    if (status != 0) mica_trapf(line, "GPU %s failed: %s (CUDA error %d)", what, reason(status), status);
}

static void *symbol(void *library, const char *name, int line) {
    void *p = dlsym(library, name);
    if (p == NULL) mica_trapf(line, "no CUDA device: the driver lacks %s", name);
    return p;
}

static void start(int line) {
    void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) mica_trapf(line, "no CUDA device (%s)", dlerror());
    cu.init = symbol(library, "cuInit", line);
    cu.device_count = symbol(library, "cuDeviceGetCount", line);
    cu.device_get = symbol(library, "cuDeviceGet", line);
    cu.primary_retain = symbol(library, "cuDevicePrimaryCtxRetain", line);
    cu.context_set = symbol(library, "cuCtxSetCurrent", line);
    cu.module_load = symbol(library, "cuModuleLoadData", line);
    cu.function_get = symbol(library, "cuModuleGetFunction", line);
    cu.alloc = symbol(library, "cuMemAlloc_v2", line);
    cu.release = symbol(library, "cuMemFree_v2", line);
    cu.to_device = symbol(library, "cuMemcpyHtoD_v2", line);
    cu.to_host = symbol(library, "cuMemcpyDtoH_v2", line);
    cu.device_copy = symbol(library, "cuMemcpyDtoD_v2", line);
    cu.zero = symbol(library, "cuMemsetD8_v2", line);
    cu.launch = symbol(library, "cuLaunchKernel", line);
    cu.synchronize = symbol(library, "cuCtxSynchronize", line);
    cu.error_string = symbol(library, "cuGetErrorString", line);
    CUresult status = cu.init(0);
    if (status != 0) mica_trapf(line, "no CUDA device (%s)", reason(status));
    int count = 0;
    if (cu.device_count(&count) != 0 || count == 0) mica_trap(line, "no CUDA device (the driver sees none)");
    CUdevice device;
    CUcontext context;
    check(cu.device_get(&device, 0), "device lookup", line);
    check(cu.primary_retain(&context, device), "context", line);
    check(cu.context_set(context), "context", line);
    ready = true;
}

static void need_device(int line) {
    if (!ready) start(line);
}

/* ---------------------------------------------------------------- memory */

/* Freed blocks wait in lists by size class (powers of two) for reuse. */
#define CLASSES 48
static struct block {
    CUdeviceptr ptr;
    struct block *next;
} *cache[CLASSES];

static int size_class(int64_t bytes) {
    int c = 0;
    while (((int64_t)1 << c) < bytes) c++;
    return c;
}

static CUdeviceptr take(int64_t bytes, int line) {
    int c = size_class(bytes > 0 ? bytes : 1);
    if (cache[c] != NULL) {
        struct block *b = cache[c];
        cache[c] = b->next;
        CUdeviceptr ptr = b->ptr;
        mica_free(b);
        return ptr;
    }
    CUdeviceptr ptr = 0;
    check(cu.alloc(&ptr, (size_t)1 << c), "allocation", line);
    return ptr;
}

void mica_dev_drop(mica_dev *d) {
    if (d->ptr != 0) {
        struct block *b = mica_alloc(sizeof *b, 0);
        int c = size_class(d->bytes > 0 ? d->bytes : 1);
        b->ptr = d->ptr;
        b->next = cache[c];
        cache[c] = b;
    }
    d->ptr = 0;
    d->bytes = 0;
}

/* Storage of `bytes` for d, zeroed when it is new: a device place starts at zero. */
void mica_dev_reserve(mica_dev *d, int64_t bytes, int line) {
    need_device(line);
    if (d->ptr != 0 && d->bytes == bytes) return;
    mica_dev_drop(d);
    d->ptr = take(bytes, line);
    d->bytes = bytes;
    check(cu.zero(d->ptr, 0, (size_t)bytes), "zeroing", line);
}

/* The device address of a place a kernel writes; a place never written gets zeroed storage. */
uint64_t mica_dev_data(mica_dev *d, int64_t bytes, int line) {
    if (d->ptr == 0) mica_dev_reserve(d, bytes, line);
    return d->ptr;
}

/* The device address of a value a kernel only reads. A place never written
 * reads as zeros, from one zeroed block per size class that every such read
 * shares (no kernel writes its inputs), so reading leaves the place as it was. */
uint64_t mica_dev_read(const mica_dev *d, int64_t bytes, int line) {
    static CUdeviceptr zeros[CLASSES];
    if (d->ptr != 0) return d->ptr;
    int c = size_class(bytes > 0 ? bytes : 1);
    if (zeros[c] == 0) {
        need_device(line);
        zeros[c] = take(bytes, line);
        check(cu.zero(zeros[c], 0, (size_t)1 << c), "zeroing", line);
    }
    return zeros[c];
}

void mica_dev_assign(mica_dev *dst, mica_dev src, int line) {
    need_device(line); /* a device operation, even when it moves only zeros */
    if (dst->ptr == src.ptr) return;
    if (src.ptr == 0) { /* a place never written: the copy holds zeros too, reserved when first used */
        mica_dev_drop(dst);
        return;
    }
    mica_dev_reserve(dst, src.bytes, line);
    check(cu.device_copy(dst->ptr, src.ptr, (size_t)src.bytes), "copy", line);
}

/* A fresh copy (for records holding device fields, copied whole). */
mica_dev mica_dev_copy(mica_dev src) {
    mica_dev copy = {0};
    if (src.ptr != 0) mica_dev_assign(&copy, src, 0);
    return copy;
}

void mica_dev_move(mica_dev *dst, mica_dev src) {
    mica_dev_drop(dst);
    *dst = src;
}

void mica_dev_upload(mica_dev *dst, const void *host, int64_t bytes, int line) {
    mica_dev_reserve(dst, bytes, line);
    check(cu.to_device(dst->ptr, host, (size_t)bytes), "copy to the device", line);
}

void mica_dev_download(void *host, mica_dev src, int64_t bytes, int line) {
    need_device(line);
    if (src.ptr == 0) { /* never written: zeros */
        memset(host, 0, (size_t)bytes);
        return;
    }
    check(cu.to_host(host, src.ptr, (size_t)bytes), "copy to the host", line);
}

/* Raw copies for the device tape, between addresses it already holds. */
void mica_dev_copy_raw(uint64_t dst, uint64_t src, int64_t bytes, int line) {
    check(cu.device_copy(dst, src, (size_t)bytes), "copy", line);
}

void mica_dev_put(uint64_t dst, const void *host, int64_t bytes, int line) {
    check(cu.to_device(dst, host, (size_t)bytes), "copy to the device", line);
}

void mica_dev_get(void *host, uint64_t src, int64_t bytes, int line) {
    check(cu.to_host(host, src, (size_t)bytes), "copy to the host", line);
}

/* ---------------------------------------------------------------- launching */

static struct kernel {
    const char *name;
    CUfunction function;
    struct kernel *next;
} *kernels;

static CUfunction find(const char *name, int line) {
    for (struct kernel *k = kernels; k != NULL; k = k->next)
        if (strcmp(k->name, name) == 0) return k->function;
    /* Loaded at the first launch, so a program that only moves values needs no module. */
    if (module == NULL) check(cu.module_load(&module, mica_ptx), "PTX load", line);
    struct kernel *k = mica_alloc(sizeof *k, line);
    k->name = name;
    check(cu.function_get(&k->function, module, name), name, line);
    k->next = kernels;
    kernels = k;
    return k->function;
}

static void launch(const char *kernel, int64_t threads, int64_t grid_y, int line, const char *signature,
                   va_list list);

/* Launch `kernel` over `threads` threads (blocks of 256). signature names each
 * argument that follows: p a device pointer (uint64_t), i an int64_t, u a
 * 32-bit flag (passed as int), f a float (passed as double), d a double;
 * callers take it from the kernel's PTX parameters (the compiler from
 * micatool.compile.ptx.KERNELS, the device tape from mica_kernel_signatures.h).
 * Waits for the kernel, so a fault is reported at the Mica line that caused it. */
void mica_gpu_launch(const char *kernel, int64_t threads, int line, const char *signature, ...) {
    va_list list;
    va_start(list, signature);
    launch(kernel, threads, 1, line, signature, list);
    va_end(list);
}

/* The same over a grid grid_y blocks tall (a batch of products, say). */
void mica_gpu_launch_grid(const char *kernel, int64_t threads, int64_t grid_y, int line, const char *signature, ...) {
    va_list list;
    va_start(list, signature);
    launch(kernel, threads, grid_y, line, signature, list);
    va_end(list);
}

static void launch(const char *kernel, int64_t threads, int64_t grid_y, int line, const char *signature,
                   va_list list) {
    need_device(line);
    union {
        uint64_t p;
        int64_t i;
        uint32_t u;
        float f;
        double d;
    } values[16];
    void *args[16];
    int n = 0;
    for (const char *s = signature; *s && n < 16; s++, n++) {
        switch (*s) {
        case 'p': values[n].p = va_arg(list, uint64_t); break;
        case 'i': values[n].i = va_arg(list, int64_t); break;
        case 'u': values[n].u = (uint32_t)va_arg(list, int); break;
        case 'f': values[n].f = (float)va_arg(list, double); break;
        default: values[n].d = va_arg(list, double); break;
        }
        args[n] = &values[n];
    }
    if (threads <= 0 || grid_y <= 0) return;
    unsigned blocks = (unsigned)((threads + 255) / 256);
    check(cu.launch(find(kernel, line), blocks, (unsigned)grid_y, 1, 256, 1, 1, 0, NULL, args, NULL), kernel, line);
    check(cu.synchronize(), kernel, line);
}
